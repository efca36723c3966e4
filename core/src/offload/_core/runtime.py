"""The global runtime state: one ``Context`` made by the first ``olInit``, freed by the last
``olShutDown``, reference counted under one lock.

Readers never lock: ``STATE.ctx`` is either None or a fully built context (it is published only
after every backend is initialised, and cleared before teardown starts), so the per-call check is
one attribute read. Every generated call registers itself in ``ctx.calls`` while it runs (and
re-reads ``STATE.ctx`` after registering), so the final ``olShutDown`` first waits for the calls
other threads are inside, and nothing is released under a running call.

While the final ``olShutDown`` runs on the main thread, SIGINT is held: a ``KeyboardInterrupt``
(Ctrl-C) arriving meanwhile is delivered once the teardown has finished, and a ``BaseException``
raised by a backend hook is kept and re-raised the same way, so no queue thread, program or
allocation is leaked whatever is raised.

A child made by ``os.fork()`` while a session is open inherits none of its devices: the
backends' threads, driver contexts and queues exist only in the parent. In the child the session
is dropped (``STATE.ctx`` is None, the reference count 0, a fresh lock), every ``ol*`` call is
``UNINITIALIZED`` with details saying the parent's devices are not usable after ``fork``, nothing
of the parent's runs at the child's exit (no shutdown, no queued work, no timeline file), and
``olInit`` in the child is refused too (a backend's native state, such as the host device's
worker pool, was copied mid-flight and cannot be trusted); a child that needs devices should be
started with ``multiprocessing``'s "spawn" or "forkserver" method. A child forked while no
session is open is unaffected.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .allocations import AllocationMap
from .drain import Drain, pending_work, shutdown_timeout, stuck_error
from .._values.enums import DeviceInfo, ErrorCode, PlatformBackend
from .._values.errors import OffloadError, as_offload_error, join_errors
from .._values.faults import listen as listen_for_faults
from .handles import Context as ContextHandle
from .handles import Device, Platform
from .native import entry_points as native_entry_points
from .native import word as native_word
from .ranges import HOST_MAPPINGS
from .registry import BackendStatus, BoundBackend, load_backends, release_backend
from .._values.types import Dimensions, InitArgs
from .._values.enums import API_LEVELS

DISABLE_VALIDATION_ENV = "OFFLOAD_DISABLE_VALIDATION"
PARKED_IDLE_LIMIT = 8  # finished parked queues kept per device for reuse; more are released


class CallTracer(Protocol):
    """What a session holds of its tracer (``_trace.tracing`` makes it): the entry points emit
    each traced call to it."""

    def emit(self, call: Any) -> None: ...


TracerFactory = Callable[[Callable[[int], "Device | None"]], "CallTracer | None"]
"""Makes a session's tracer (None: no tracing), given the lookup of an address's device."""


class Context:
    """Everything one init..shutdown session owns."""

    __slots__ = (
        "trace", "validate", "tracer", "platforms", "devices", "statuses", "allocations", "globals", "queue_ids",
        "calls", "orphan_errors", "api_level", "holds",
    )

    trace: bool
    validate: bool
    tracer: CallTracer | None  # set when trace is True
    platforms: list[Platform]
    devices: list[Device]
    statuses: list[BackendStatus]
    allocations: AllocationMap
    globals: AllocationMap  # global variables of live programs on non-host devices
    queue_ids: itertools.count[int]
    calls: list[Any]  # every generated call running now (any thread): its name, or what it registers
    orphan_errors: list[OffloadError]  # errors of destroyed (parked) queues, for the final olShutDown
    api_level: str  # "r1" or "main" (InitArgs.api_level): numbering, trace spelling, semantics
    holds: list[None]  # one None per copy or fill between its range check and its end (hold)

    def __init__(self, api_level: str = "r1", make_tracer: TracerFactory | None = None) -> None:
        self.api_level = api_level
        self.allocations = AllocationMap()
        self.tracer = None if make_tracer is None else make_tracer(self._owner_of)
        self.trace = self.tracer is not None
        self.validate = DISABLE_VALIDATION_ENV not in os.environ
        self.platforms = []
        self.devices = []
        self.statuses = []
        self.globals = AllocationMap()
        self.queue_ids = itertools.count(1)
        self.calls = []
        self.orphan_errors = []
        self.holds = []

    def hold(self) -> list[None]:
        """Hold what a copy is about to check until it ends (``holds.pop()``): memory retired after
        this is given back only once the copy ended (``grace``). Returns the list to release it from."""
        holds = self.holds
        holds.append(None)
        return holds

    def grace(self) -> list[None]:
        """Start a grace period (right after memory was retired): copies that hold from now on see
        the retirement; the returned list empties once every copy that held before has ended
        (``ranges.wait_for_grace``)."""
        old = self.holds
        self.holds = []
        return old

    def _owner_of(self, address: int) -> Device | None:
        """The device of the allocation holding ``address`` (what the timeline is told)."""
        allocation = self.allocations.find(address)
        return None if allocation is None else allocation.device


class _State:
    __slots__ = ("ctx", "untraced", "refcount", "library_refs", "lock", "last_statuses", "forked_from")

    def __init__(self) -> None:
        self.forked_from = 0  # the parent's pid when this process was forked inside a session
        self.ctx: Context | None = None
        # ctx when it does not trace, else None: the entry points' one read and test (a tracing
        # or uninitialised library takes their slow branch, which reads ctx)
        self.untraced: Context | None = None
        self.refcount = 0
        self.library_refs = 0  # the references among refcount that the library holds itself (library_reference)
        self.lock = threading.Lock()
        self.last_statuses: list[BackendStatus] = []


STATE = _State()


def backend_status() -> list[BackendStatus]:
    """What happened to every discovered backend at the last fresh ``olInit`` (empty before one)."""
    return list(STATE.last_statuses)

UNINITIALIZED_DETAILS = "liboffload has not been initialized - please call olInit before using this API"


def forked_details() -> str:
    return (
        f"this process was forked (os.fork) from pid {STATE.forked_from} while its offload session was open: "
        "the parent's devices, queues, memory and programs are not usable here, and olInit is refused "
        "(start the child with multiprocessing's 'spawn' or 'forkserver' method instead)"
    )


def uninitialized() -> OffloadError:
    if STATE.forked_from:
        return OffloadError(ErrorCode.UNINITIALIZED, forked_details())
    return OffloadError(ErrorCode.UNINITIALIZED, UNINITIALIZED_DETAILS)


def _after_fork_in_child() -> None:
    """``os.register_at_fork``: drop the parent's session in the child (see the module doc)."""
    STATE.lock = threading.Lock()  # the parent's may have been held by another thread at fork
    if STATE.ctx is not None or STATE.forked_from:
        STATE.forked_from = STATE.forked_from or os.getppid()
        STATE.ctx = None
        STATE.untraced = None
        STATE.refcount = 0
        STATE.library_refs = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def _device_faulted(native: object, error: OffloadError) -> None:
    """``backend_support.report_device_fault``'s listener: mark the current session's device whose
    backend object is ``native`` faulted, and publish both range maps afresh, so that no verdict the
    range checks cached before (``_ranges.HOT``, read by both paths) accepts its memory again."""
    ctx = STATE.ctx
    if ctx is None:
        return
    for device in ctx.devices:
        if device.native is native and device.fault is None:
            device.fault = error
            ctx.allocations.republish()
            ctx.globals.republish()


listen_for_faults(_device_faulted)


def _build_platform(ctx: Context, bound: BoundBackend, natives: list[Any], infos: list[dict[Any, Any]]) -> Platform:
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


def make_context(ctx: Context, platform: Platform, devices: tuple[Device, ...], default: bool) -> ContextHandle:
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
        ctx = Context(init_args.api_level, make_tracer)
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
        STATE.refcount = 1
        STATE.library_refs = int(LOCAL.library > 0)


class _Local(threading.local):
    queue: Any = None  # the native queue whose host function this thread is running
    device: Any = None  # that queue's Device
    iterating: int = 0  # olIterateDevices callbacks this thread is inside
    library: int = 0  # library_reference blocks this thread is inside


LOCAL = _Local()


@contextlib.contextmanager
def library_reference() -> Iterator[None]:
    """Around the object layer's own ``olInit`` / ``olShutDown``: the reference taken or dropped
    is the library's, not the user's. The ``olShutDown`` that leaves only the library's references
    closes the user's ``olInit`` window (``shutdown`` says so: the timeline writes its file then)."""
    LOCAL.library += 1
    try:
        yield
    finally:
        LOCAL.library -= 1


def _collect(errors: list[OffloadError], interrupts: list[BaseException], what: str, call: Any, *args: Any) -> None:
    """Call a backend hook during teardown, keeping its failure instead of raising it."""
    try:
        call(*args)
    except BaseException as exc:  # noqa: B036 - kept and re-raised after the teardown
        keep(errors, interrupts, exc, what)


def keep(errors: list[OffloadError], interrupts: list[BaseException], exc: BaseException, what: str) -> None:
    """Sort one raised exception into errors (every member of a group) and interrupts."""
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(Exception)
        if matched is not None:
            errors.append(as_offload_error(matched, what))
        if rest is not None:
            interrupts.append(rest)
    elif isinstance(exc, Exception):
        errors.append(as_offload_error(exc, what))
    else:
        interrupts.append(exc)


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
            STATE.ctx = None
        teardown(ctx, errors, interrupts, LOCAL.iterating, _WAITS if LOCAL.queue is not None else frozenset(), sigints,
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
    arrived meanwhile (a second one makes the teardown stop waiting: ``_drain``). Elsewhere,
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


_WAITS = frozenset({"olSyncQueue", "olSyncEvent"})


def _other_calls(ctx: Context, own: int, ignore: frozenset[str]) -> list[str]:
    """The calls other threads are inside (``own`` calls of this thread, and ``ignore``d names, aside)."""
    calls = [str(name) for name in list(ctx.calls) if name not in ignore]
    return calls[own:] if len(calls) > own else []


def wait_for_calls(ctx: Context, own: int, ignore: frozenset[str] = frozenset(), drain: Drain | None = None) -> bool:
    """Wait until no thread but this one (``own`` calls deep) is inside a call of ``ctx`` (calls
    named in ``ignore`` aside); False where ``drain`` gave up first."""
    drain = drain if drain is not None else Drain(None, lambda: 0)
    return drain.wait(lambda: bool(_other_calls(ctx, own, ignore)),
                      lambda: f"calls on other threads ({', '.join(_other_calls(ctx, own, ignore))})")  # fmt: skip


def teardown(
    ctx: Context,
    errors: list[OffloadError],
    interrupts: list[BaseException],
    own_calls: int = 0,
    ignore: frozenset[str] = frozenset(),
    sigints: Callable[[], int] = lambda: 0,
    own_queue: Any = None,
) -> None:
    """Release every queue, program, allocation, device and backend of ``ctx`` (after the calls
    other threads are inside have returned), keeping every error and interrupt. Where waiting
    stops (``_drain``: the deadline, Ctrl-C twice), what the pending work may use stays in place: all of
    it while other threads are inside calls, else each stuck device's programs, memory and
    queues and its backend. ``own_queue``: the queue whose host function calls this (released
    from inside, never waited for)."""
    drain = Drain(shutdown_timeout(errors), sigints)
    if not wait_for_calls(ctx, own_calls, ignore, drain):
        running = ", ".join(_other_calls(ctx, own_calls, ignore)) or "calls that returned meanwhile"
        errors.append(stuck_error(drain, [f"calls on other threads: {running}"], ["every queue, program, allocation and device"]))
        return
    errors.extend(ctx.orphan_errors)
    ctx.orphan_errors = []
    leftover = ctx.allocations.drain()
    ctx.globals.drain()
    stuck: list[str] = []
    kept: list[str] = []
    for platform in ctx.platforms:
        bound = platform.backend
        stuck_here = False
        for device in platform.devices:
            with device.lock:
                queues = [(f"queue #{q.id}", q.native) for q in device.queues]
                queues += [("a destroyed (parked) queue", q) for q in device.parked]
                for queue in device.queues:
                    queue._ctx = None
                device.queues.clear()
                device.parked = []
                programs = list(device.programs)
                device.programs.clear()
            busy = []
            for label, native_queue in queues:
                pending = functools.partial(bound.has_pending_work, device.native, native_queue)
                what = functools.partial(lambda lb, q: f"{lb} of {device._describe()}: {pending_work(q)}", label, native_queue)
                if native_queue is own_queue or drain.wait(pending, what):
                    _collect(errors, interrupts, f"{bound.name}: synchronize", bound.synchronize, device.native, native_queue, True)
                else:
                    busy.append(f"{label} of {device._describe()}: {pending_work(native_queue)}")
            for program in programs:
                program._ctx = None
                for symbol in program.symbols.values():
                    symbol._ctx = None
            mine = [a for a in leftover if a.device is device]
            device._ctx = None
            if busy:  # the stuck work may still use them
                stuck += busy
                kept.append(f"{device._describe()}: {len(busy)} queue(s), {len(programs)} program(s), {len(mine)} allocation(s)")
                stuck_here = True
                continue
            for program in programs:
                _collect(errors, interrupts, f"{bound.name}: unload_binary", bound.unload_binary, device.native, program.image)
            if "mem_free" in bound.implemented:
                for allocation in mine:
                    _collect(errors, interrupts, f"{bound.name}: mem_free", bound.mem_free, device.native, allocation.start,
                             allocation.alloc_type)  # fmt: skip
        if stuck_here:
            kept.append(f"the backend {bound.name} (deinit would wait for the stuck work)")
        else:
            errors.extend(release_backend(bound, [d.native for d in platform.devices], interrupts))
        platform._ctx = None
    HOST_MAPPINGS.forget()  # after the memory and images were given back, never before
    if stuck:
        errors.append(stuck_error(drain, stuck, kept))
