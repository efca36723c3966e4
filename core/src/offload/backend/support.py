"""What every backend must do alike, written once (for backend authors; ``offload.hookspecs`` is
the contract, this module helps keep it).

- Asynchronous errors (``synchronize`` / ``sync_event``): every failure kept, in order, reported as
  one ``OffloadError`` or an ``ExceptionGroup`` of them: ``raise_kept_errors``, and ``KeptErrors``
  (a queue's list of them).
- Host functions run by a driver's C callback (``cuLaunchHostFunc``, ``hipLaunchHostFunc``):
  ``HostFunctions`` runs Python callables through one ctypes trampoline and marks the thread while
  one runs. A driver forbids driver calls there, and the releases the core may ask from inside one
  (``mem_free``, ``unload_binary``, the final teardown's hooks, ``enqueue_host_call`` on its own
  queue) could not finish there anyway: they are deferred (``DeferredWork``) to run, in order, on a
  thread of the backend once the function has returned. ``HostFunctions.synchronize`` and
  ``.has_pending_work`` are those hooks' skeleton around the driver's own wait and query.
- ``DriverHooks``: a base class of such a backend: ``run_or_defer`` for each of those releases,
  and the hookimpls it writes alike (``deinit``, ``deinit_device``, ``no_devices_reason``, and
  ``synchronize``, ``has_pending_work``, ``enqueue_host_call`` around its driver's wait and query).
- ``DriverResults``: a driver's result tuples checked (``check``, and ``ready`` for a query).
- ``ResourcePool``: driver resources (streams, events) kept for reuse.
- ``launch_extent``: the exact launch-buffer extent a driver must be given.
- ``report_device_fault``: a device that faulted for good (an illegal address, a kernel's
  SIGSEGV): the core then refuses the copies and fills of its memory that it makes itself;
  ``report_current_fault``: that, for the device a driver names current after a sticky failure.

Imports only the bottom of the core (enums, errors, types) and the contract's ``hookimpl``: a
backend may use it from any hook.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._values.faults import report_device_fault
from .._values.types import HostCopy, KernelParam
from ..hookspecs import hookimpl
from .host_functions import DeferredWork, HostFunctions, off_thread, queue_name

__all__ = [
    "DeferredWork",
    "DriverError",
    "DriverHooks",
    "DriverResults",
    "HostCopy",
    "HostFunctions",
    "KeptErrors",
    "ResourcePool",
    "StreamEvent",
    "StreamQueue",
    "launch_extent",
    "off_thread",
    "queue_name",
    "raise_kept_errors",
    "report_current_fault",
    "report_device_fault",
]

log = logging.getLogger("offload.backend_support")  # the name before the move (logging configurations use it)

T = TypeVar("T")


# --- asynchronous errors ---------------------------------------------------------------------


def raise_kept_errors(errors: Iterable[BaseException], what: str, many: str) -> None:
    """Raise the asynchronous errors a backend kept for a queue, in order (the ``synchronize`` and
    ``sync_event`` obligations in hookspecs): nothing for none, the one ``OffloadError`` for one, an
    ``ExceptionGroup`` of them for several (the core joins it). An ``OffloadError`` stays itself;
    anything else becomes ``UNKNOWN`` (``OUT_OF_RESOURCES`` for ``MemoryError``) with the exception
    as its cause. ``what`` names one failing thing ("a host function on queue 3"), ``many``
    several ("host functions on queue 3")."""
    converted: list[OffloadError] = []
    for error in errors:
        if not isinstance(error, OffloadError):
            code = ErrorCode.OUT_OF_RESOURCES if isinstance(error, MemoryError) else ErrorCode.UNKNOWN
            mapped = OffloadError(code, f"{what} failed: {type(error).__name__}: {error}")
            mapped.__cause__ = error
            error = mapped
        converted.append(error)
    if len(converted) == 1:
        raise converted[0]
    if converted:
        raise ExceptionGroup(f"{len(converted)} {many} failed", converted)


class KeptErrors:
    """A queue's asynchronous errors, kept in order until its next ``synchronize``: a base class
    of a backend's queue object.

    ``released``: the final ``olShutDown`` released the queue from one of its own host functions;
    the host functions still queued behind are dropped, and a later error is logged (no
    ``synchronize`` will ask for it).
    """

    __slots__ = ("_kept", "released")

    def __init__(self) -> None:
        self._kept: list[BaseException] = []  # appended and taken without a lock: each step is atomic
        self.released = False

    def keep(self, exc: BaseException) -> None:
        """Keep an asynchronous error for the next ``synchronize`` (logged after the release)."""
        if self.released:
            log.error("after the final olShutDown, work on %r failed: %r", self, exc)
            return
        self._kept.append(exc)

    def raise_kept(self) -> None:
        """Raise (and forget) every error kept since the last call, in order (``raise_kept_errors``)."""
        kept = self._kept
        if not kept:
            return
        errors = kept[:]
        del kept[: len(errors)]  # one kept meanwhile stays for the next call
        raise_kept_errors(errors, f"a host function on {queue_name(self)}", f"host functions on {queue_name(self)}")


def report_current_fault(error: OffloadError, devices: Mapping[int, Any], current: Callable[[], Any]) -> None:
    """A driver's sticky failure (its context or device takes no more work): report ``error``
    (``report_device_fault``) for the device of ``devices`` (the backend's, by the key its driver
    names the current one with) that ``current()`` names, a driver result tuple ``(status, key)``
    (``cuCtxGetCurrent``, ``hipGetDevice``); nothing where the driver cannot say or names none."""
    try:
        status, key = current()
        device = None if int(status) else devices.get(int(key))
    except Exception:  # (the driver cannot say: the error stands alone)
        device = None
    if device is not None:
        report_device_fault(device, error)


class DriverHooks:
    """A base class of a backend over a driver whose host functions run on the driver's thread
    (``host_calls``: its ``HostFunctions``, None before ``init``): the hookimpls every such backend
    writes alike.

    - ``devices``: the device objects ``init`` returned; each has ``release()`` (what
      ``deinit_device`` does: the device's streams, events and context released) and
      ``recycle(queue)`` (a released queue's stream back to its pool; an adopted one left alone).
    - ``wait_queue(queue)`` and ``queue_busy(queue)``: the driver's wait for a queue and its
      answer whether work is pending, which the subclass implements; ``synchronize``,
      ``has_pending_work`` and ``enqueue_host_call`` put ``host_calls`` around them.
    - ``unavailable_reason``: why ``init`` found no devices (None when it found some), the
      ``no_devices_reason`` hook's answer.
    - ``run_or_defer(work)``: each release the core may ask from inside a host function
      (``mem_free``, ``mem_free_async``, ``unload_binary``, ``deinit_device``, ``deinit``) runs
      ``work`` now, or, on a host function's thread, once the function has returned (its
      exception then an error of the function's queue).
    """

    host_calls: HostFunctions | None = None
    unavailable_reason: str | None = None
    devices: list[Any]

    def run_or_defer(self, work: Callable[[], None]) -> None:
        """``work()`` here, or after the host function this thread runs (``HostFunctions.deferring``)."""
        host_calls = self.host_calls
        if host_calls is None or not host_calls.deferring(None, work):
            work()

    @hookimpl
    def no_devices_reason(self) -> str | None:
        """``unavailable_reason``."""
        return self.unavailable_reason

    @hookimpl
    def deinit(self) -> None:
        """Forget the devices (``run_or_defer``)."""
        self.run_or_defer(self.devices.clear)

    @hookimpl
    def deinit_device(self, device: Any) -> None:
        """``device.release()`` (``run_or_defer``)."""
        self.run_or_defer(device.release)

    def wait_queue(self, queue: Any) -> None:
        """The driver's wait for ``queue``'s work; raise ``OffloadError`` if it fails."""
        raise NotImplementedError(f"{type(self).__name__} must implement wait_queue")

    def queue_busy(self, queue: Any) -> bool:
        """The driver's answer whether ``queue`` has work pending."""
        raise NotImplementedError(f"{type(self).__name__} must implement queue_busy")

    @hookimpl
    def synchronize(self, device: Any, queue: Any, release: bool) -> None:
        """``HostFunctions.synchronize`` around ``wait_queue``; released: ``device.recycle(queue)``."""
        host_calls = self.host_calls
        assert host_calls is not None  # (the core asks after init)
        host_calls.synchronize(queue, release, self.wait_queue, device.recycle)

    @hookimpl
    def has_pending_work(self, device: Any, queue: Any) -> bool:
        """``HostFunctions.has_pending_work`` around ``queue_busy``."""
        host_calls = self.host_calls
        assert host_calls is not None
        return host_calls.has_pending_work(queue, self.queue_busy)

    @hookimpl
    def enqueue_host_call(self, device: Any, queue: Any, callback: Callable[[], None]) -> None:
        """``HostFunctions.enqueue``."""
        host_calls = self.host_calls
        assert host_calls is not None
        host_calls.enqueue(queue, callback)


class DriverError(OffloadError):
    """An ``OffloadError`` from a driver call; ``.result`` is the driver's status value (a backend
    subclasses it under its driver's name: ``CudaError``, ``HipError``)."""

    def __init__(self, code: ErrorCode, details: str, result: int) -> None:
        super().__init__(code, details)
        self.result = result


class DriverResults:
    """The checks of a driver's result tuples ``(status, *values)`` (cuda.bindings', hip-python's),
    made alike: a failed status raised by the backend's ``raise_for(driver, status, call)`` (its
    error type and words), and ``not_ready``, the status a query answers while work is pending."""

    __slots__ = ("raise_for", "not_ready")

    def __init__(self, raise_for: Callable[[Any, Any, str], Any], not_ready: int) -> None:
        self.raise_for = raise_for
        self.not_ready = not_ready

    def check(self, driver: Any, returned: Any, call: str) -> Any:
        """Raise for a failed ``call``, else its value(s): None for none, the value for one, a
        tuple for several."""
        status = returned[0]
        if status:
            self.raise_for(driver, status, call)
        if len(returned) == 1:
            return None
        return returned[1] if len(returned) == 2 else returned[1:]

    def ready(self, driver: Any, returned: Any, call: str) -> bool:
        """A query's answer (a stream's, an event's): True when done, False while ``not_ready``;
        any other failure raises."""
        status = returned[0]
        if not status:
            return True
        if int(status) == self.not_ready:
            return False
        self.raise_for(driver, status, call)
        return False  # (raise_for raised)


class StreamQueue(KeptErrors):
    """A GPU backend's queue: one driver stream (``stream``) of ``device`` (which has an
    ``ordinal``) and the errors its host functions raised; ``native_record``: its record for the
    native entry points (``offload.backend.native``; None without them); ``adopted``: the stream is
    another library's (``adopt_stream``), never destroyed nor pooled by the backend."""

    __slots__ = ("device", "stream", "native_record", "adopted", "__weakref__")

    def __init__(self, device: Any, stream: Any, adopted: bool = False) -> None:
        super().__init__()
        self.device = device
        self.stream = stream
        self.native_record: Any = None
        self.adopted = adopted

    def __repr__(self) -> str:
        return f"<{type(self).__name__} device={self.device.ordinal} stream={int(self.stream):#x}>"


class StreamEvent:
    """A GPU backend's recorded driver event (``handle``) and the queue it was recorded on (whose
    kept errors its ``sync_event`` raises)."""

    __slots__ = ("handle", "queue")

    def __init__(self, handle: Any, queue: StreamQueue) -> None:
        self.handle = handle
        self.queue = queue


# --- pools -----------------------------------------------------------------------------------


class ResourcePool(Generic[T]):
    """Driver resources of one kind (streams, events) kept for reuse: ``acquire`` hands out an idle
    one or makes one (``create``), ``release`` takes it back, ``destroy`` destroys every one the
    pool made, idle or still handed out (the device is going away: an event the application never
    destroyed is destroyed too); ``destroy_one`` each, every failure kept, raised as by
    ``raise_kept_errors``."""

    __slots__ = ("_create", "_destroy", "_idle", "_made", "_lock", "what")

    def __init__(self, create: Callable[[], T], destroy_one: Callable[[T], None], what: str) -> None:
        self._create = create
        self._destroy = destroy_one
        self._idle: list[T] = []
        self._made: list[T] = []
        self._lock = threading.Lock()
        self.what = what  # "streams of device 0": named in destroy's errors

    def acquire(self) -> T:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        item = self._create()
        with self._lock:
            self._made.append(item)
        return item

    def release(self, item: T) -> None:
        with self._lock:
            self._idle.append(item)

    def __len__(self) -> int:
        return len(self._idle)

    def destroy(self) -> None:
        with self._lock:
            made, self._made, self._idle = self._made, [], []
        failures: list[BaseException] = []
        for item in made:
            try:
                self._destroy(item)
            except Exception as exc:
                failures.append(exc)
        raise_kept_errors(failures, f"destroying one of the {self.what}", f"destructions of {self.what}")


# --- launches --------------------------------------------------------------------------------


def launch_extent(params: Iterable[KernelParam | tuple[int, int]]) -> int:
    """The bytes of a packed argument buffer a driver must be given: the end of the last parameter
    (its offset + size). A longer buffer (a C struct's tail padding) is accepted by the core
    (hookspecs' ``kernel_params``), but a driver takes exactly this extent: CUDA refuses more with
    ``CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`` (llvm-project PR #172249)."""
    return max((int(p[0]) + int(p[1]) for p in params), default=0)

