"""Type stub of the C extension offload.objects._copier (see _copier.c and _compiled_copy.py)."""

from collections.abc import Callable
from typing import Any, Final

BUFFER_COPY_FROM: Final[int]
BUFFER_COPY_TO: Final[int]
ARRAY_COPY_FROM: Final[int]
QUEUE_COPY: Final[int]

class Copier:
    """``Buffer.copy_from``, ``Buffer.copy_to``, ``Array.copy_from`` or ``Queue.copy`` (``kind``):
    the copy of two live Buffers (or C-contiguous Arrays) in C, every other call by ``fallback``
    (the Python method)."""

    __wrapped__: Callable[..., Any]  # (and __name__, __qualname__, __module__, __doc__: the fallback's)
    def __init__(self, fallback: Callable[..., Any], kind: int) -> None: ...
    @property
    def counts(self) -> dict[str, int]:
        """{'fast', 'deferred'}: calls copied here / made by the fallback."""
    @property
    def fallback(self) -> Callable[..., Any]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any: ...

def configure(
    buffer: type, array: type, queue: type, device: type, session_cell: object, memcpy: Callable[..., Any], /
) -> None: ...
def buffer_address(view: object, /) -> int:
    """The address of ``view``'s C-contiguous buffer (0 when it has none); BufferError otherwise."""
