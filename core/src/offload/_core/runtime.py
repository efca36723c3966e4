"""``olInit`` and ``olShutDown`` of the core: the first ``init`` builds the session (its
platforms and devices, from the backends ``registry`` loads), the final ``shutdown`` tears it
down (``teardown``), reference counted under ``STATE.lock`` (``session``).

While the final ``olShutDown`` runs on the main thread, SIGINT is held: a ``KeyboardInterrupt``
(Ctrl-C) arriving meanwhile is delivered once the teardown has finished, and a ``BaseException``
raised by a backend hook is kept and re-raised the same way, so no queue thread, program or
allocation is leaked whatever is raised.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .._values.enums import API_LEVELS, DeviceInfo, ErrorCode, PlatformBackend
from .._values.errors import OffloadError, as_offload_error, join_errors
from .._values.types import Dimensions, InitArgs
from .handles import Context as ContextHandle
from .handles import Device, Platform
from .mempool import DevicePool
from .native import entry_points as native_entry_points
from .native import word as native_word
from .registry import BoundBackend, load_backends
from .session import LOCAL, SESSION_END, STATE, Session, TracerFactory, forked_details, uninitialized
from .teardown import WAITS, teardown


def _build_platform(ctx: Session, bound: BoundBackend, natives: list[Any], infos: list[dict[Any, Any]]) -> Platform:
    platform: Platform = Platform._make(ctx, backend=bound, name=bound.name, kind=bound.kind, devices=[])
    for index, (native, info) in enumerate(zip(natives, infos)):
        device: Device = Device._make(
            ctx,
            backend=bound,
            native=native,
            platform=platform,
            index=index,
            info=info,
            info_cache={},
            is_host=bound.kind is PlatformBackend.HOST,
            lock=threading.Lock(),
            parked=[],
            queues=set(),
            adopted=set(),
            pool=DevicePool(),
            programs=set(),
            limits=launch_limits(info),
            registered={},
            entry_points=native_entry_points(bound, native),
            word=None,
            fault=None,
        )
        device.word = native_word(device, native)
        platform.devices.append(device)
    platform.default_context = make_context(ctx, platform, tuple(platform.devices), default=True)
    return platform


def make_context(ctx: Session, platform: Platform, devices: tuple[Device, ...], default: bool) -> ContextHandle:
    """A context handle over ``devices`` (of ``platform``), owning nothing yet."""
    handle: ContextHandle = ContextHandle._make(
        ctx, platform=platform, devices=devices, default=default, lock=threading.Lock()
    )
    return handle


def init_arguments(args: Any) -> InitArgs:
    """``olInit``'s argument checked: None (defaults) or an ``InitArgs``."""
    if args is None:
        return InitArgs()
    if not isinstance(args, InitArgs):
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"InitArgs must be an offload.InitArgs or None, got {type(args).__name__}")
    if args.api_level not in API_LEVELS:
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT, f"InitArgs.api_level {args.api_level!r} is not one of {', '.join(API_LEVELS)}"
        )
    if args.platforms is not None:
        for item in args.platforms:
            if not isinstance(item, (str, PlatformBackend)):
                raise OffloadError(
                    ErrorCode.INVALID_ENUMERATION, f"InitArgs.platforms holds {item!r}: not a PlatformBackend or a backend name"
                )
    return args


def launch_limits(info: dict[Any, Any]) -> tuple[Any, ...]:
    """(MAX_WORK_GROUP_SIZE, its per-dimension Dimensions, MAX_WORK_SIZE, its per-dimension
    Dimensions) from a device's info; each None where the backend does not give it."""

    def scalar(prop: DeviceInfo) -> int | None:
        try:
            return int(info[prop])
        except (KeyError, TypeError, ValueError):
            return None

    def dims(prop: DeviceInfo) -> Dimensions | None:
        try:
            return Dimensions(*(int(v) for v in info[prop]))
        except (KeyError, TypeError, ValueError):
            return None

    return (
        scalar(DeviceInfo.MAX_WORK_GROUP_SIZE),
        dims(DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION),
        scalar(DeviceInfo.MAX_WORK_SIZE),
        dims(DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION),
    )


def init(args: Any = None, make_tracer: TracerFactory | None = None) -> None:
    """``olInit``: the first call builds the context (``args``: an ``InitArgs``, read only then;
    ``make_tracer``: its tracer, from ``OFFLOAD_TRACE``); later calls count references."""
    with STATE.lock:
        if STATE.ctx is not None:
            STATE.refcount += 1
            STATE.library_refs += LOCAL.library > 0
            return
        if STATE.forked_from:
            raise OffloadError(ErrorCode.UNINITIALIZED, forked_details())
        init_args = init_arguments(args)
        ctx = Session(init_args.api_level, make_tracer)
        platforms = None if init_args.platforms is None else tuple(init_args.platforms)
        loaded, statuses = load_backends(platforms)
        for bound, natives, infos in loaded:
            platform = _build_platform(ctx, bound, natives, infos)
            ctx.platforms.append(platform)
            ctx.devices.extend(platform.devices)
        ctx.statuses = statuses
        STATE.last_statuses = statuses
        STATE.ctx = ctx
        STATE.untraced = None if ctx.trace else ctx
        STATE.recorder = _compiled_recorder(ctx.tracer)
        STATE.refcount = 1
        STATE.library_refs = int(LOCAL.library > 0)


def _compiled_recorder(tracer: Any) -> Any:
    """The tracer's timeline recorder where it is the compiled one (``_compiled._fastpath.Recorder``:
    the compiled path then records its launches itself), else None."""
    recorder = getattr(getattr(tracer, "timeline", None), "recorder", None)
    return recorder if type(recorder).__module__ == "offload._compiled._fastpath" else None


def shutdown() -> bool:
    """``olShutDown``: the last call tears everything down, every failure joined, none dropped.
    Returns whether this call closed the user's window: it left only the library's own
    references (``library_reference``), the session going on.

    The final call waits for calls that other threads are inside, then releases everything. Inside
    a host function it runs on that function's thread, does not wait for other threads' waits
    (``olSyncQueue``, ``olSyncEvent``: they may be waiting for this very function), and releases
    the function's own queue from inside it (``synchronize(release=True)`` on the queue's own
    thread: the backend drops the work queued behind the function, see ``hookspecs``).
    """
    errors: list[OffloadError] = []
    interrupts: list[BaseException] = []
    with _sigint_held(interrupts) as sigints:
        with STATE.lock:
            ctx = STATE.ctx
            if ctx is None:
                raise uninitialized()
            STATE.refcount -= 1
            library = LOCAL.library > 0
            if library and STATE.library_refs:
                STATE.library_refs -= 1
            if STATE.refcount:
                return not library and STATE.refcount == STATE.library_refs
            STATE.untraced = None
            STATE.recorder = None
            STATE.ctx = None
        for listener in tuple(SESSION_END):  # (before anything is released)
            try:
                listener()
            except Exception as exc:  # noqa: BLE001 - joined, the teardown goes on
                errors.append(as_offload_error(exc, "a session-end listener"))
        teardown(ctx, errors, interrupts, LOCAL.iterating, WAITS if LOCAL.queue is not None else frozenset(), sigints,
                 LOCAL.queue)  # fmt: skip
    error = join_errors(errors)
    if interrupts:
        interrupt = interrupts[0]
        if error is not None:
            interrupt.__context__ = error
        raise interrupt
    if error is not None:
        raise error
    return False


@contextlib.contextmanager
def _sigint_held(interrupts: list[BaseException]) -> Iterator[Callable[[], int]]:
    """On the main thread, hold SIGINT: its Python handler runs (once) when the block ends (a
    ``KeyboardInterrupt`` it raises is appended to ``interrupts``). Yields how many SIGINTs
    arrived meanwhile (a second one makes the teardown stop waiting: ``_core.drain``). Elsewhere,
    nothing to do: Python runs signal handlers on the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: 0
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield lambda: 0
        return
    held: list[tuple[int, Any]] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append((signum, frame)))
    try:
        yield lambda: len(held)
    finally:
        signal.signal(signal.SIGINT, previous)
        for signum, frame in held[:1]:
            try:
                previous(signum, frame)
            except BaseException as exc:  # noqa: B036 - re-raised by shutdown after its errors
                interrupts.append(exc)
