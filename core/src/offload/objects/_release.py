"""``Release``: the layer's finalizer, ``weakref.finalize(obj, func, *args)`` with ``atexit = False``
at a quarter of its cost (~0.3 us made and detached against ~1.1 us: a Buffer allocated and
freed on a queue in a loop paid that once per iteration).

``func(*args)`` runs once: when ``obj`` is collected, or at ``release()`` (``__call__``), unless
``detach()`` came first; never once the interpreter began to exit (the layer's exit handler
releases everything at once, as ``atexit = False`` finalizers are skipped then).
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Callable
from typing import Any

_ARMED: dict[weakref.ref[Any], Release] = {}  # the live ones, by their weak reference (which holds no cycle)
_EXITING = [False]
_DISARMED: weakref.ref[Any] = weakref.ref(_EXITING.__class__)  # (a reference never armed: to a class that stays)


def _collected(ref: weakref.ref[Any]) -> None:
    release = _ARMED.pop(ref, None)
    if release is not None and not _EXITING[0]:
        release._func(*release._args)


class Release:
    """Calls ``func(*args)`` once ``obj`` is collected (see the module's docstring)."""

    __slots__ = ("_ref", "_func", "_args")

    def __init__(self, obj: Any, func: Callable[..., Any], *args: Any) -> None:
        self._func = func
        self._args = args
        self._ref = weakref.ref(obj, _collected)
        _ARMED[self._ref] = self

    @property
    def alive(self) -> bool:
        """Whether ``func`` is still to run (neither called, detached nor collected)."""
        return self._ref in _ARMED

    def detach(self) -> bool | None:
        """Disarm: True when it was still armed (``func`` will not run), else None."""
        if _ARMED.pop(self._ref, None) is None:
            return None
        self._ref = _DISARMED  # (the weak reference goes: the object's death calls nothing)
        return True

    def __call__(self) -> Any:
        """Run ``func(*args)`` now if still armed (then never again); its result, else None."""
        if _ARMED.pop(self._ref, None) is None:
            return None
        self._ref = _DISARMED
        return self._func(*self._args)


@atexit.register
def _exiting() -> None:  # (registered first, so run last: after the layer's own exit handler)
    _EXITING[0] = True
