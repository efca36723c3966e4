"""Queues are HIP streams (non-blocking, from the device's pool); events are HIP timing events.

Host functions run through ``hipLaunchHostFunc`` with one C trampoline (``HostCalls``, on
``offload.backend.support.HostFunctions``). HIP forbids HIP calls inside one ("The host function
must not make any HIP API calls"), and ``hipFree`` / ``hipModuleUnload`` synchronise the device
whose stream that function holds: so the driver work asked from one is deferred until it has
returned (``HostCalls.deferring``), a query of another queue is made by a short-lived thread, and
``synchronize`` from one follows ``HostFunctions.synchronize``. Errors: every exception a
host function (or deferred work) raised is kept on its queue, in order (``KeptErrors``), and
raised by the queue's next ``synchronize`` or a ``sync_event`` of an event recorded on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from offload import ErrorCode, OffloadError
from offload.backend.support import StreamEvent, StreamQueue, raise_kept_errors
from offload.backend.native import NativeHostFunctions

from ._device import HipDevice
from ._driver import check, ready
from ._errors import raise_for

__all__ = [
    "adopt",
    "HipEvent",
    "HipQueue",
    "HostCalls",
    "create_event",
    "destroy_event",
    "event_elapsed_time",
    "is_event_complete",
    "release_device",
    "stream_busy",
    "sync_event",
    "wait_event",
]

HIP_ERROR_NOT_READY = 600
HIP_EVENT_DEFAULT = 0  # timing enabled


class HipQueue(StreamQueue):
    """A HIP stream as a queue (``offload.backend.support.StreamQueue``)."""

    __slots__ = ()
    device: HipDevice


class HipEvent(StreamEvent):
    """A recorded HIP event and the queue it was recorded on (``offload.backend.support.StreamEvent``)."""

    __slots__ = ()
    queue: HipQueue


class HostCalls(NativeHostFunctions):
    """Python host functions on HIP streams, through ``hipLaunchHostFunc`` (``driver``: hip-python's
    ``hip``)."""

    def launch_host_function(self, queue: HipQueue, address: int, key: int) -> None:
        status = self.driver.hipLaunchHostFunc(queue.stream, address, key)[0]
        if status:
            raise_for(self.driver, status, "hipLaunchHostFunc")

    def wait(self, queue: HipQueue) -> None:
        """HIP's wait for the queue's stream (``synchronize`` calls it), polling while Python host
        functions are queued (``_drain``)."""
        hip = self.driver
        _drain(self, hip.hipStreamQuery, queue.stream)
        status = hip.hipStreamSynchronize(queue.stream)[0]
        if status:
            raise_for(hip, status, "hipStreamSynchronize")


def _drain(host_calls: HostCalls, query: Callable[[Any], Any], handle: Any) -> None:
    """While Python host functions are queued, wait by polling ``query`` with the GIL free.

    hip-python 6.4 / 7.x hold the GIL in blocking calls such as hipStreamSynchronize; a host
    function (which needs the GIL on the runtime's thread) would then deadlock them.
    """
    delay = 0.0
    while host_calls.pending():
        if int(query(handle)[0]) != HIP_ERROR_NOT_READY:
            return
        time.sleep(delay)
        delay = min(1e-3, 2 * delay or 2e-5)


def create_queue(device: HipDevice) -> HipQueue:
    return HipQueue(device, device.streams.acquire())


def adopt(device: HipDevice, stream: int) -> HipQueue:
    """A queue over another library's stream, which must be one of this device
    (``hipStreamGetDevice``); not the null stream (0), on which offload's synchronous work runs."""
    hip = device.hip
    if not stream:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, "the HIP null stream (0) cannot be adopted: offload's synchronous work runs on it")
    device.activate()
    handle = hip.hipStream_t.fromObj(stream)
    status, ordinal = hip.hipStreamGetDevice(handle)
    if status or int(ordinal) != device.ordinal:
        why = f"hipStreamGetDevice answers {int(status)}" if status else f"it is a stream of device {int(ordinal)}"
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{stream:#x} is not a stream of HIP device {device.ordinal} ({why})")
    return HipQueue(device, handle, adopted=True)


def stream_busy(queue: HipQueue) -> bool:
    """HIP's answer to ``has_pending_work`` (``HostFunctions.has_pending_work`` asks it)."""
    hip = queue.device.hip
    return not ready(hip, hip.hipStreamQuery(queue.stream), "hipStreamQuery")


def create_event(device: HipDevice, queue: HipQueue) -> HipEvent:
    hip = device.hip
    device.activate()
    handle = check(hip, hip.hipEventCreateWithFlags(HIP_EVENT_DEFAULT), "hipEventCreateWithFlags")
    status = hip.hipEventRecord(handle, queue.stream)[0]
    if status:
        hip.hipEventDestroy(handle)
        raise_for(hip, status, "hipEventRecord")
    event = HipEvent(handle, queue)
    with device.lock:
        device.events.add(event)
    return event


def destroy_event(device: HipDevice, event: HipEvent) -> None:
    with device.lock:
        device.events.discard(event)
    check(device.hip, device.hip.hipEventDestroy(event.handle), "hipEventDestroy")


def wait_event(device: HipDevice, queue: HipQueue, event: HipEvent) -> None:
    check(device.hip, device.hip.hipStreamWaitEvent(queue.stream, event.handle, 0), "hipStreamWaitEvent")


def foreign_stream_wait(device: HipDevice, stream: int, event: HipEvent) -> None:
    """Another library's stream (a raw hipStream_t; 0 is the null stream) waits for ``event``."""
    hip = device.hip
    check(hip, hip.hipStreamWaitEvent(hip.hipStream_t.fromObj(stream) if stream else None, event.handle, 0),
          "hipStreamWaitEvent")  # fmt: skip


def foreign_stream_sync(device: HipDevice, stream: int) -> None:
    hip = device.hip
    check(hip, hip.hipStreamSynchronize(hip.hipStream_t.fromObj(stream) if stream else None), "hipStreamSynchronize")


def is_event_complete(device: HipDevice, event: HipEvent) -> bool:
    hip = device.hip
    return ready(hip, hip.hipEventQuery(event.handle), "hipEventQuery")


def sync_event(host_calls: HostCalls, device: HipDevice, event: HipEvent) -> None:
    """Wait for the event; raise the kept errors of the queue it was recorded on."""
    hip = device.hip
    _drain(host_calls, hip.hipEventQuery, event.handle)
    check(hip, hip.hipEventSynchronize(event.handle), "hipEventSynchronize")
    event.queue.raise_kept()


def event_elapsed_time(device: HipDevice, start: HipEvent, end: HipEvent) -> float:
    hip = device.hip
    result = hip.hipEventElapsedTime(start.handle, end.handle)
    if result[0]:
        if int(result[0]) == HIP_ERROR_NOT_READY:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, "an event is not complete yet (olSyncEvent it first)")
        raise_for(hip, result[0], "hipEventElapsedTime")
    return float(result[1])


def release_device(device: HipDevice) -> None:
    """Destroy the events still alive (the core does not) and the pooled streams; every failure
    is kept and raised after the rest has been released."""
    device.activate()
    with device.lock:
        events, device.events = list(device.events), set()
    failures: list[BaseException] = []
    for event in events:
        try:
            check(device.hip, device.hip.hipEventDestroy(event.handle), "hipEventDestroy")
        except OffloadError as exc:
            failures.append(exc)
    try:
        device.streams.destroy()
    except OffloadError as exc:
        failures.append(exc)
    except ExceptionGroup as group:
        failures.extend(group.exceptions)
    what = f"device {device.ordinal}"
    raise_kept_errors(failures, f"releasing {what}", f"releases of {what}")
