"""In-order queues, events as markers, and host functions in queue order.

OpenCL has no host-function command: a host function is a marker (complete once the work before
it is) and a barrier behind it waiting on a user event (the gate). The queue's runner thread
(``DeferredWork``: one exists only while functions are pending) waits for the marker, runs the
function through ``offload.backend.support.HostFunctions`` (ordering, every error kept, releases
asked from inside deferred until it has returned) and opens the gate. Every enqueue keeps its
event as the queue's ``last`` one: ``has_pending_work`` asks whether it is complete.

A command that fails on the device reports it only in its event (a negative execution status;
``clFinish`` succeeds), and in an in-order queue the commands behind it fail too. So every event is
kept (``OpenCLQueue.track``) until it is complete or the queue's next wait reads it: that wait
raises the first failure. Keeping them also matters to PoCL 3.1, which aborts the process ("PTHREAD
ERROR in pocl_update_event_failed()") when a command fails after its event's last release.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from offload import ErrorCode, OffloadError
from offload.backend.support import DeferredWork, HostFunctions, KeptErrors

from . import _cl as cl
from ._device import OpenCLDevice
from ._errors import driver

__all__ = ["OpenCLEvent", "OpenCLHostFunctions", "OpenCLQueue", "queue_busy", "wait"]

_COMPLETE = 0  # CL_COMPLETE (CL/cl.h); a failed command's status is negative
_PRUNE_AT = 64  # kept events before the complete ones are let go
_names = itertools.count(1)


class OpenCLQueue(KeptErrors):
    """An in-order ``cl.CommandQueue`` (pooled per device), its last event, the events of its
    commands not known complete (``pending``) and its runner."""

    __slots__ = ("device", "cl_queue", "last", "pending", "prune_at", "lock", "runner", "name")

    def __init__(self, device: OpenCLDevice, cl_queue: cl.CommandQueue) -> None:
        super().__init__()
        self.device = device
        self.cl_queue = cl_queue
        self.last: cl.Event | None = None
        self.pending: list[cl.Event] = []
        self.prune_at = _PRUNE_AT
        self.lock = threading.Lock()
        self.name = f"offload-opencl-queue-{next(_names)}"
        self.runner = DeferredWork(self.name)

    def __repr__(self) -> str:
        return f"<{self.name}>"

    def track(self, event: cl.Event) -> None:
        """``event`` is the queue's newest command: kept until it is known complete (the complete
        ones are let go when ``prune_at`` are kept, so the list stays about as long as the work
        in flight) or until the next ``wait`` reads it."""
        with self.lock:
            self.last = event
            pending = self.pending
            pending.append(event)
            if len(pending) >= self.prune_at:
                pending[:] = [e for e in pending if e.command_execution_status != _COMPLETE]
                self.prune_at = max(_PRUNE_AT, 2 * len(pending))

    def take_pending(self) -> list[cl.Event]:
        """The kept events, let go by the queue (those still running are kept: enqueued since the wait)."""
        with self.lock:
            pending = self.pending
            self.pending = [e for e in pending if e.command_execution_status > _COMPLETE]
            self.prune_at = max(_PRUNE_AT, 2 * len(self.pending))
            if not self.pending:
                self.last = None
            return pending


class OpenCLEvent:
    """A marker enqueued on ``queue``."""

    __slots__ = ("marker", "queue")

    def __init__(self, marker: cl.Event, queue: OpenCLQueue) -> None:
        self.marker = marker
        self.queue = queue


def _failed(events: list[cl.Event], queue: OpenCLQueue) -> None:
    """Keep the error of the first command that ended with a negative status (an asynchronous
    failure; the commands behind it in the queue fail with it)."""
    for event in events:
        status = event.command_execution_status
        if status < 0:
            queue.keep(OffloadError(ErrorCode.BACKEND_FAILURE, f"a command on {queue!r} failed with OpenCL status {status}"))
            return


def wait(queue: OpenCLQueue) -> None:
    """Block until ``queue``'s commands and host functions are done (``synchronize``'s wait)."""
    with driver(f"clFinish of {queue!r}"):
        queue.cl_queue.finish()
    queue.runner.wait(queue)
    _failed(queue.take_pending(), queue)


def queue_busy(queue: OpenCLQueue) -> bool:
    last = queue.last
    return queue.runner.pending_for(queue) or (last is not None and last.command_execution_status > _COMPLETE)


class OpenCLHostFunctions(HostFunctions):
    """Host functions as marker + gate on the queue, run by the queue's runner thread."""

    def launch_host_function(self, queue: OpenCLQueue, address: int, key: int) -> None:
        with driver(f"host function on {queue!r}"):
            marker = cl.enqueue_marker(queue.cl_queue)
            gate = cl.UserEvent(queue.device.context)
            try:
                queue.track(cl.enqueue_barrier(queue.cl_queue, wait_for=[gate]))
            except BaseException:
                gate.set_status(_COMPLETE)
                raise

        def run() -> None:
            try:
                marker.wait()
            except cl.Error:  # an earlier command failed: kept by the next synchronize
                pass
            finally:
                try:
                    self.run_host_function(key)
                finally:
                    gate.set_status(_COMPLETE)

        queue.runner.submit([(queue, run)])


def sync_event(event: OpenCLEvent) -> None:
    with driver("clWaitForEvents"):
        event.marker.wait()
    event.queue.raise_kept()


def elapsed_ms(start: OpenCLEvent, end: OpenCLEvent) -> float:
    for name, event in (("StartEvent", start), ("EndEvent", end)):
        if event.marker.command_execution_status != _COMPLETE:
            raise OffloadError(ErrorCode.INVALID_EVENT, f"{name} is not complete")
    with driver("CL_PROFILING_COMMAND_END"):
        return float(end.marker.profile.end - start.marker.profile.end) / 1e6


def make_queue(device: OpenCLDevice) -> cl.CommandQueue:
    with driver(f"clCreateCommandQueue on {device!r}"):
        return cl.CommandQueue(device.context, device.device, cl.command_queue_properties.PROFILING_ENABLE)
