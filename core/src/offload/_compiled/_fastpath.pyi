"""Type stub of the C extension offload._compiled._fastpath (see _fastpath.c and core/DESIGN.md, "The compiled path")."""

from collections.abc import Callable
from typing import Any, Final

COMPILED: Final[tuple[str, ...]]  # the ol* functions it compiles
ABI_VERSION: Final[int]  # OFFLOAD_NATIVE_ABI_VERSION of offload/include/offload_native.h

class Entry:
    """A compiled ol* function: the common case in C, every other case by its fallback."""

    __name__: str
    __doc__: str | None
    __wrapped__: Callable[..., Any]
    @property
    def counts(self) -> dict[str, int]:
        """{'fast', 'deferred', 'native'}: calls made here, by the fallback, by a backend's entry point."""
    @property
    def fallback(self) -> Callable[..., Any]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

def configure(config: dict[str, Any], /) -> None: ...
def entry(name: str, fallback: Callable[..., Any], /) -> Entry: ...
def entry_points_ok(capsule: object, /) -> bool: ...
