"""Queues are CUDA streams (non-blocking, from a per-device pool); events are CUDA events (from a
pool, with timing).

Host functions run through ``cuLaunchHostFunc`` with one C trampoline (``HostCalls``, on
``offload.backend.support.HostFunctions``). The driver forbids CUDA calls inside one
(``cuLaunchHostFunc``: "The host function must not make any CUDA API calls"; the driver answers
``CUDA_ERROR_NOT_PERMITTED`` or deadlocks): so the driver work asked from one (``olMemFree``,
``olDestroyProgram``, the final ``olShutDown``, a host function launched on its own queue) is
deferred until it has returned (``HostCalls.deferring``), a query of another queue is made by a
short-lived thread, and ``synchronize`` from one follows ``HostFunctions.synchronize``.
Errors: every exception a host function (or deferred work) raised is kept on its queue, in order
(``KeptErrors``), and raised by the queue's next ``synchronize`` or a ``sync_event`` of an event
recorded on it: one ``OffloadError`` for one, an ``ExceptionGroup`` of them for several, as the
host backend does.
"""

from __future__ import annotations

from typing import Any

from offload import ErrorCode, OffloadError
from offload.backend.support import ResourcePool, StreamEvent, StreamQueue
from offload.backend.native import NativeExtension, NativeHostFunctions

from ._device import CudaDevice
from ._driver import check, ready

__all__ = [
    "adopt",
    "CudaEvent",
    "CudaQueue",
    "HostCalls",
    "create_event",
    "event_elapsed_time",
    "event_pool",
    "is_event_complete",
    "stream_busy",
    "stream_pool",
    "sync_event",
    "wait",
    "wait_event",
]

_CU_STREAM_NON_BLOCKING = 1


class CudaQueue(StreamQueue):
    """A CUDA stream as a queue (``offload.backend.support.StreamQueue``)."""

    __slots__ = ()
    device: CudaDevice


class CudaEvent(StreamEvent):
    """A recorded CUDA event and the queue it was recorded on (``offload.backend.support.StreamEvent``)."""

    __slots__ = ()
    queue: CudaQueue


class HostCalls(NativeHostFunctions):
    """Python host functions on CUDA streams, through ``cuLaunchHostFunc``."""

    def __init__(self, driver: Any, native: NativeExtension) -> None:
        super().__init__("offload-cuda", driver, native)
        self._host_fn = driver.CUhostFn(self.address)

    def launch_host_function(self, queue: CudaQueue, address: int, key: int) -> None:
        d = self.driver
        queue.device.activate()
        check(d, d.cuLaunchHostFunc(queue.stream, self._host_fn, key), "cuLaunchHostFunc")


def stream_pool(device: CudaDevice) -> ResourcePool[Any]:
    """The device's non-blocking streams, reused after ``release``."""
    d = device.driver

    def create() -> Any:
        device.activate()
        return check(d, d.cuStreamCreate(_CU_STREAM_NON_BLOCKING), "cuStreamCreate")

    return ResourcePool(create, lambda stream: check(d, d.cuStreamDestroy(stream), "cuStreamDestroy"),
                        f"streams of device {device.ordinal}")  # fmt: skip


def event_pool(device: CudaDevice) -> ResourcePool[Any]:
    """The device's events (timing enabled, for ``olGetEventElapsedTime``), reused."""
    d = device.driver

    def create() -> Any:
        device.activate()
        return check(d, d.cuEventCreate(0), "cuEventCreate")

    return ResourcePool(create, lambda event: check(d, d.cuEventDestroy(event), "cuEventDestroy"),
                        f"events of device {device.ordinal}")  # fmt: skip


def adopt(device: CudaDevice, stream: int) -> CudaQueue:
    """A queue over another library's stream, which must belong to the device's primary context
    (``cuStreamGetCtx``; the legacy and per-thread default streams, 0 to 2, resolve to the current
    one, made the primary context here)."""
    d = device.driver
    device.activate()
    handle = d.CUstream(stream)
    result, context = d.cuStreamGetCtx(handle)
    if int(result) or int(context) != device.context_address:
        why = f"the driver answers {d.cuGetErrorName(result)[1].decode()}" if int(result) else "it belongs to another context"
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT, f"{stream:#x} is not a stream of device {device.ordinal}'s primary context ({why})"
        )
    return CudaQueue(device, handle, adopted=True)


def wait(queue: CudaQueue) -> None:
    """The driver's wait for the queue's stream (``HostFunctions.synchronize`` calls it)."""
    device = queue.device
    d = device.driver
    device.activate()
    check(d, d.cuStreamSynchronize(queue.stream), "cuStreamSynchronize")


def stream_busy(queue: CudaQueue) -> bool:
    """The driver's answer to ``has_pending_work`` (``HostFunctions.has_pending_work`` asks it)."""
    device = queue.device
    d = device.driver
    device.activate()
    return not ready(d, d.cuStreamQuery(queue.stream), "cuStreamQuery")


def create_event(device: CudaDevice, events: ResourcePool[Any], queue: CudaQueue) -> CudaEvent:
    d = device.driver
    event = events.acquire()
    device.activate()
    try:
        check(d, d.cuEventRecord(event, queue.stream), "cuEventRecord")
    except BaseException:
        events.release(event)
        raise
    return CudaEvent(event, queue)


def wait_event(device: CudaDevice, queue: CudaQueue, event: CudaEvent) -> None:
    d = device.driver
    device.activate()
    check(d, d.cuStreamWaitEvent(queue.stream, event.handle, 0), "cuStreamWaitEvent")


def foreign_stream_wait(device: CudaDevice, stream: int, event: CudaEvent) -> None:
    """Another library's stream (a raw CUstream; 1 and 2 are the legacy and per-thread default
    streams) waits for ``event``."""
    d = device.driver
    device.activate()
    check(d, d.cuStreamWaitEvent(d.CUstream(stream), event.handle, 0), "cuStreamWaitEvent")


def foreign_stream_sync(device: CudaDevice, stream: int) -> None:
    d = device.driver
    device.activate()
    check(d, d.cuStreamSynchronize(d.CUstream(stream)), "cuStreamSynchronize")


def is_event_complete(device: CudaDevice, event: CudaEvent) -> bool:
    d = device.driver
    device.activate()
    return ready(d, d.cuEventQuery(event.handle), "cuEventQuery")


def sync_event(device: CudaDevice, event: CudaEvent) -> None:
    """Wait for the event; raise the kept errors of the queue it was recorded on."""
    d = device.driver
    device.activate()
    check(d, d.cuEventSynchronize(event.handle), "cuEventSynchronize")
    event.queue.raise_kept()


def event_elapsed_time(device: CudaDevice, start: CudaEvent, end: CudaEvent) -> float:
    d = device.driver
    device.activate()
    for name, event in (("StartEvent", start), ("EndEvent", end)):
        if not is_event_complete(device, event):
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{name} is not complete yet (olSyncEvent it first)")
    return float(check(d, d.cuEventElapsedTime(start.handle, end.handle), "cuEventElapsedTime"))
