"""The object layer's one ``olInit`` reference, and the objects it made per session.

The layer calls ``olInit`` once, lazily, when the first object is made, and drops that reference
at interpreter exit (or on ``release()``). The flat API can be used alongside: its own
``olInit``/``olShutDown`` pairs nest around the layer's reference. If the flat API tears the
library down anyway (more ``olShutDown`` calls than ``olInit`` calls), objects of that session
go stale (their calls fail with the flat API's errors) and the next object made takes a fresh
reference on a new session.
"""

from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING, Any

from .._entrypoints import olInit, olShutDown
from .._errors import OffloadError
from .._runtime import STATE

if TYPE_CHECKING:
    from .._runtime import Context

_lock = threading.RLock()
_held: Context | None = None  # the session whose reference the layer holds
_atexit_registered = False
_wrappers: dict[int, Any] = {}  # id(handle) -> the layer's object, for the held session only


def acquire() -> Context:
    """The current session, taking the layer's reference on it first if it does not hold one."""
    ctx = STATE.ctx
    if ctx is not None and ctx is _held:
        return ctx
    return _take_reference()


def _take_reference() -> Context:
    global _held, _atexit_registered

    with _lock:
        ctx = STATE.ctx
        if ctx is not None and ctx is _held:
            return ctx
        olInit()
        _held = STATE.ctx
        _wrappers.clear()
        if not _atexit_registered:
            atexit.register(_release_at_exit)
            _atexit_registered = True
        assert _held is not None
        return _held


def release() -> None:
    """Drop the layer's reference if it still holds one (objects of the session go stale)."""
    global _held

    with _lock:
        ctx, _held = _held, None
        _wrappers.clear()
        if ctx is not None and STATE.ctx is ctx:
            olShutDown()


def _release_at_exit() -> None:
    try:
        release()
    except OffloadError:
        pass  # teardown failures at exit cannot be acted on; the flat API reports them when asked


def is_current(ctx: Context | None) -> bool:
    """Whether ``ctx`` is the live session (finalizers of older sessions do nothing)."""
    return ctx is not None and STATE.ctx is ctx


def wrapper(handle: Any, make: Any) -> Any:
    """The layer's one object for ``handle`` in the held session (made by ``make()`` once)."""
    key = id(handle)
    with _lock:
        obj = _wrappers.get(key)
        if obj is None or obj._handle is not handle:
            obj = _wrappers[key] = make()
        return obj
