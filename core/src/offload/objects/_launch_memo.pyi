"""Type stub of the C extension offload.objects._launch_memo (see _launch_memo.c and _compiled_memo.py)."""

from collections.abc import Callable
from typing import Any

class Relauncher:
    """``Queue.launch`` (``queued``) or ``Kernel.launch``: the kernel's remembered launch in C,
    a call with other arguments by ``Kernel._run`` (where the Python method sends it), every other
    call by ``fallback`` (the Python method)."""

    __wrapped__: Callable[..., Any]  # (and __name__, __qualname__, __module__, __doc__: the fallback's)
    def __init__(self, fallback: Callable[..., Any], queued: bool) -> None: ...
    @property
    def counts(self) -> dict[str, int]:
        """{'fast', 'packed', 'deferred'}: calls relaunched here / handed to ``Kernel._run`` (not
        the remembered arguments) / made by the fallback (another shape of call)."""
    @property
    def fallback(self) -> Callable[..., Any]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any: ...

def configure(kernel: type, queue: type, closes: list[int], launch: Callable[..., Any], /) -> None: ...
