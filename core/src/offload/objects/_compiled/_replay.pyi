"""Type stub of the C extension offload.objects._compiled._replay (see _replay.h, _replay.c and _records.py)."""

from collections.abc import Callable
from typing import Any, Final

VERSION: Final[int]

class MemoryRecord:
    _copied: Any
    @property
    def _serial(self) -> int: ...

class QueueRecord:
    _handle: Any
    _inflight: list[Any]
    @property
    def _serial(self) -> int: ...

class KernelRecord:
    _memo: LaunchVerdict
    _memo_previous: LaunchVerdict

class Stamps:
    @property
    def closes(self) -> int: ...
    @property
    def births(self) -> int: ...
    def close(self) -> None: ...

STAMPS: Final[Stamps]

class CopyVerdict:
    kind: Final[int]
    call: Final[tuple[Any, ...]]
    stamp: Final[int]

def publish_copy(destination: object, kind: int, items: tuple[Any, ...], call: tuple[Any, ...], stamp: int, /) -> None: ...

class LaunchVerdict:
    args: Final[tuple[Any, ...]]
    grid: Final[Any]
    block: Final[Any]
    shared_memory: Final[Any]
    closes: Final[int]
    launch: Final[Any]
    device: Final[Any]
    kernel: Final[Any]
    data: Final[Any]
    sizes: Final[Any]
    first: Final[int]
    first_class: Final[Any]
    second: Final[int]
    second_class: Final[Any]
    owner: Final[Any]
    def __init__(
        self, args: tuple[Any, ...], grid: Any, block: Any, shared_memory: Any, closes: int, launch: Any, device: Any,
        kernel: Any, data: Any, sizes: Any, first: int, first_class: Any, second: int, second_class: Any, owner: Any,
    ) -> None: ...

class _Method:
    __wrapped__: Callable[..., Any]  # (and __name__, __qualname__, __module__, __doc__: the fallback's)
    @property
    def counts(self) -> dict[str, int]:
        """{'fast', 'deferred'}: calls replayed here / made by the fallback (the Python method)."""
    @property
    def fallback(self) -> Callable[..., Any]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any: ...

class Copier(_Method):
    def __init__(
        self, fallback: Callable[..., Any], kind: int, positional: int, keywords: tuple[str, ...], defaults: tuple[Any, ...],
        destination: int, source: int, queue: int,
    ) -> None: ...

class Relauncher(_Method):
    def __init__(
        self, fallback: Callable[..., Any], queued: bool, keywords: tuple[str, ...], defaults: tuple[Any, ...], shared: int,
        miss: Callable[..., Any],
    ) -> None: ...

def buffer_address(view: object, /) -> int:
    """The address of ``view``'s C-contiguous buffer (0 when it has none); BufferError otherwise."""
