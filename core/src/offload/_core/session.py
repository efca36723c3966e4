"""The session: one ``Session`` made by the first ``olInit`` (``runtime.init``), freed by the
final ``olShutDown`` (``runtime.shutdown``, ``teardown``), and ``STATE``, which holds it.

Readers never lock: ``STATE.ctx`` is either None or a fully built session (it is published only
after every backend is initialised, and cleared before teardown starts), so the per-call check is
one attribute read. Every generated call registers itself in ``ctx.calls`` while it runs (and
re-reads ``STATE.ctx`` after registering), so the final ``olShutDown`` first waits for the calls
other threads are inside, and nothing is released under a running call.

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
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .._compiled.interface import FIELDS
from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._values.faults import listen as listen_for_faults
from .allocations import AllocationMap
from .handles import Device, Platform
from .bound import BackendStatus

DISABLE_VALIDATION_ENV = "OFFLOAD_DISABLE_VALIDATION"
PARKED_IDLE_LIMIT = 8  # finished parked queues kept per device for reuse; more are released


class CallTracer(Protocol):
    """What a session holds of its tracer (``_trace.tracing`` makes it): the entry points emit
    each traced call to it."""

    def emit(self, call: Any) -> None: ...

    def done(self, fn: Any, args: tuple[Any, ...], result: Any, start_ns: int, end_ns: int, level: str) -> None:
        """A call that succeeded (the common case, without building the emitted record)."""


TracerFactory = Callable[[Callable[[int], "Device | None"]], "CallTracer | None"]
"""Makes a session's tracer (None: no tracing), given the lookup of an address's device."""


class Session:
    """Everything one olInit ... final olShutDown session owns (``STATE.ctx`` while it is live)."""

    __slots__ = (
        *FIELDS["session"], "trace", "validate", "tracer", "platforms", "devices", "statuses", "globals", "queue_ids",
        "orphan_errors", "api_level",
    )  # (the fields the compiled path reads first: _compiled.interface)

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
    __slots__ = (*FIELDS["state"], "refcount", "library_refs", "lock", "last_statuses", "forked_from")

    def __init__(self) -> None:
        self.forked_from = 0  # the parent's pid when this process was forked inside a session
        self.ctx: Session | None = None
        # ctx when it does not trace, else None: the entry points' one read and test (a tracing
        # or uninitialised library takes their slow branch, which reads ctx)
        self.untraced: Session | None = None
        self.recorder: Any = None  # the session's compiled timeline recorder (_compiled._fastpath.Recorder), when it has one
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
        STATE.recorder = None
        STATE.refcount = 0
        STATE.library_refs = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def _device_faulted(native: object, error: OffloadError) -> None:
    """``backend_support.report_device_fault``'s listener: mark the current session's device whose
    backend object is ``native`` faulted, and publish both range maps afresh, so that no verdict the
    range checks cached before (``HOT`` and the compiled path's verdicts, keyed by the snapshot) accepts its memory again."""
    ctx = STATE.ctx
    if ctx is None:
        return
    for device in ctx.devices:
        if device.native is native and device.fault is None:
            device.fault = error
            ctx.allocations.republish()
            ctx.globals.republish()


listen_for_faults(_device_faulted)


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
