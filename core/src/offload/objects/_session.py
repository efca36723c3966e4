"""The object layer's one ``olInit`` reference, and the objects it made per session.

The layer calls ``olInit`` once, lazily, when the first object is made, and drops that reference
at interpreter exit (or on ``release()``). The flat API can be used alongside: its own
``olInit``/``olShutDown`` pairs nest around the layer's reference (taken and dropped inside
``library_reference``, so the runtime knows it is the library's: the user's last ``olShutDown``
still closes the user's window, and a timeline is written then). If the flat API tears the
library down anyway (more ``olShutDown`` calls than ``olInit`` calls), objects of that session
go stale (their calls fail with the flat API's errors) and the next object made takes a fresh
reference on a new session.

Exports (DLPack capsules, numpy views made by ``__array__``) of session memory hold one more
``olInit`` reference (``pin``) while any of them lives, so an ``olShutDown`` meant to end the
session only drops a reference: the memory a view reads stays allocated until the last export is
released (``unpin``), or the interpreter exits.

Finalizers never call into the runtime from inside it: the garbage collector runs them wherever
an allocation triggers a collection, possibly while the core holds one of its locks (freeing then
deadlocked). ``release_later`` runs a release now when no core frame is on this thread's stack,
else queues it; the queue is drained when a collection ends outside the core, and at the layer's
next object, ``close()`` or exit. Nor does release work run on a thread that may serve a queue: a
collection on any thread but the main one (a backend's queue or cooperative-group thread, where
a release waiting for that queue would wait for itself; its frame being set up is not yet on the
stack to be seen) queues its releases, and the layer's own thread (``offload-objects-release``)
runs them.

In a child made by ``os.fork()`` the parent's session is not the layer's: the layer forgets its
references there (the child's exit releases nothing) and the parent's objects are stale.
"""

from __future__ import annotations

import atexit
import collections
import gc
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._api.flat import olInit, olShutDown
from .._api.sessions import Session, current_session, library_reference, on_session_end
from . import _dlpack
from ._records import STAMPS
from ._release import Release

FORKED = (
    "this process was forked after offload was used: the parent's devices, memory and objects are not "
    "usable in the child (use multiprocessing's 'spawn' or 'forkserver' start method)"
)

_lock = threading.RLock()
_held: Session | None = None  # the session whose reference the layer holds
_atexit_registered = False
_wrappers: dict[int, Any] = {}  # id(handle) -> the layer's object, for the held session only
_pinned: Session | None = None  # the session an extra reference is held on for live exports
_parent: Session | None = None  # in a forked child: the parent's session (never current here)


_deferred: collections.deque[tuple[Callable[..., None], tuple[Any, ...]]] = collections.deque()


def _core_on_stack() -> bool:
    """Whether this thread is inside the core or a backend (a frame of ``offload*`` outside the
    object layer, or a generated entry point): it may hold a lock a release would take."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if (name.startswith("offload") and not name.startswith("offload.objects")) or frame.f_code.co_filename.startswith(
            "<offload entry point"
        ):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


_collecting: set[int] = set()  # the idents of the threads inside a collection now


def _off_main_collection() -> bool:
    """Whether this thread is collecting garbage and is not the main thread (it may serve a queue)."""
    return bool(_collecting) and threading.get_ident() in _collecting and threading.current_thread() is not threading.main_thread()


def release_later(release: Callable[..., None], *args: Any) -> None:
    """Run a finalizer's ``release(*args)`` now if safe, else queue it (see the module's docstring)."""
    if _core_on_stack() or _off_main_collection():
        _deferred.append((release, args))
    else:
        release(*args)


def defer(release: Callable[..., None], *args: Any) -> None:
    """Queue ``release(*args)`` for the next ``drain`` (a release that must follow others the
    collector is about to queue: a context destroyed after the objects it owns)."""
    _deferred.append((release, args))


def drain() -> None:
    """Run the queued releases, unless this thread is inside the core."""
    if not _deferred or _core_on_stack():
        return
    while _deferred:
        try:
            release, args = _deferred.popleft()
        except IndexError:  # another thread took the last one
            return
        release(*args)


class _Releaser:
    """The layer's thread that runs the releases a collection off the main thread queued."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            try:
                drain()
            except Exception:  # no caller to raise it to: reported as an uncaught one, the thread goes on
                sys.excepthook(*sys.exc_info())

    def request(self) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():  # first use, or a forked child
                self.thread = threading.Thread(target=self.run, name="offload-objects-release", daemon=True)
                self.thread.start()
        self.wake.set()


_releaser = _Releaser()


def _drain_after_gc(phase: str, info: dict[str, int]) -> None:
    ident = threading.get_ident()
    if phase == "start":
        _collecting.add(ident)
        return
    _collecting.discard(ident)
    if _deferred:
        if threading.current_thread() is threading.main_thread():
            drain()
        else:
            _releaser.request()


gc.callbacks.append(_drain_after_gc)


def acquire() -> Session:
    """The current session, taking the layer's reference on it first if it does not hold one."""
    if _deferred:
        drain()
    ctx = current_session()
    if ctx is not None and ctx is _held:
        return ctx
    return _take_reference()


def _take_reference() -> Session:
    global _held, _atexit_registered

    with _lock:
        ctx = current_session()
        if ctx is not None and ctx is _held:
            return ctx
        if forked_from_parent(ctx):
            raise OffloadError(ErrorCode.UNSUPPORTED, FORKED)
        settle()  # a session kept only by exports that are gone ends before the new reference
        with library_reference():
            olInit()
        _held = current_session()
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
        STAMPS.close()  # the objects of the session go stale: no verdict made in it holds
        if is_current(ctx):
            with library_reference():
                olShutDown()


def pin(ctx: Session | None) -> None:
    """Hold one more reference on ``ctx`` (the live session) while exports of its memory live."""
    global _pinned

    with _lock:
        if ctx is None or _pinned is ctx or not is_current(ctx):
            return
        with library_reference():
            olInit()
        _pinned = ctx


def unpin() -> None:
    """Drop the exports' reference (the caller found no live export of session memory)."""
    global _pinned

    with _lock:
        ctx, _pinned = _pinned, None
        if is_current(ctx):
            with library_reference():
                olShutDown()


def settle() -> None:
    """Drop the exports' reference when no export of session memory is left."""
    if _pinned is None:
        return
    for owner in _dlpack.live_owners():
        if getattr(getattr(owner, "_buffer", None), "_ctx", None) is not None:
            return
    unpin()


def _release_at_exit() -> None:
    for drop in (drain, unpin, release):
        try:
            drop()
        except OffloadError:
            pass  # teardown failures at exit cannot be acted on; the flat API reports them when asked


def _forget_in_child() -> None:
    """After ``os.fork()``, in the child: the parent's session and references are not ours."""
    global _held, _pinned, _parent, _lock

    _lock = threading.RLock()  # another thread of the parent may have held it at the fork
    _parent = _held if _held is not None else _pinned if _pinned is not None else current_session()
    _held = _pinned = None
    _wrappers.clear()
    STAMPS.close()


os.register_at_fork(after_in_child=_forget_in_child)
on_session_end(STAMPS.close)  # however the session ends (more olShutDown than olInit too): no verdict of it holds


def is_current(ctx: Session | None) -> bool:
    """Whether ``ctx`` is the live session of this process (finalizers of older sessions, and a
    forked child's copies of the parent's objects, do nothing)."""
    return ctx is not None and current_session() is ctx and ctx is not _parent


def forked_from_parent(ctx: Session | None) -> bool:
    """Whether ``ctx`` is the session of the parent this process was forked from."""
    return ctx is not None and ctx is _parent


def wrapper(handle: Any, make: Any) -> Any:
    """The layer's one object for ``handle`` in the held session (made by ``make()`` once)."""
    key = id(handle)
    with _lock:
        obj = _wrappers.get(key)
        if obj is None or obj._handle is not handle:
            obj = _wrappers[key] = make()
        return obj


H = TypeVar("H")


class HandleOwner(Generic[H]):
    """A layer object owning one flat handle (``handle``); its finalizer releases the handle
    through ``release_later`` when the object is closed or collected (``closed`` then). Each
    subclass holds ``_handle`` and ``_finalizer`` in its own slots (a Queue's handle is its record's)."""

    __slots__ = ()

    _handle: H
    _finalizer: Release

    def _own(self, handle: H, release: Callable[..., None], *args: Any) -> None:
        """Take ``handle``; ``release(*args)`` runs once, at ``close()`` or collection (never at exit)."""
        self._handle = handle  # type: ignore[misc]  # (a slot of each subclass, or its record's)
        self._finalizer = Release(self, release_later, release, *args)  # type: ignore[misc]

    @property
    def handle(self) -> H:
        return self._handle

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive


class Closing:
    """``with`` for an object with ``close()``: leaving the block closes it."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ClosedOnExit(Closing):
    """``with`` for an object whose ``close()`` may refuse: leaving the block closes it; when the
    block raised, an OffloadError of ``close()`` is dropped (the block's exception is the one to see)."""

    __slots__ = ()

    def __exit__(self, *exc: object) -> None:
        if not exc or exc[0] is None:  # (exc: the block's exception type, value and traceback)
            self.close()
            return
        try:
            self.close()
        except OffloadError:
            pass


def stale_details(owner: object, ctx: Session) -> str:
    """Why ``owner`` (a Buffer) of session ``ctx`` cannot be used any more."""
    if forked_from_parent(ctx):
        return f"{owner!r}: {FORKED}"
    return f"{owner!r} belongs to an offload session that has ended (olShutDown); its memory was released"


def exports_of(buffer: Any) -> int:
    """How many live exports view ``buffer``'s memory (0 for None). When no export of session
    memory is left, the exports' session reference is dropped (``_session.settle``)."""
    if _pinned is not None:  # (settle's own test, without its call: every close asks)
        settle()
    if buffer is None or not _dlpack.any_exported():
        return 0
    return sum(1 for o in _dlpack.live_owners() if getattr(o, "_buffer", None) is buffer)  # (an Array of its memory)
