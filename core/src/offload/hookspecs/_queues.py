"""The contract's queue and event hooks (``offload.hookspecs`` re-exports them)."""

from __future__ import annotations

from collections.abc import Callable

from .._values.opaque import NativeDevice, NativeEvent, NativeQueue
from ._markers import hookspec


# --- queues ----------------------------------------------------------------------------------


@hookspec
def create_queue(device: NativeDevice) -> NativeQueue:
    """Create an in-order queue and return it as an opaque ``queue`` (driver streams are worth
    reusing: ``offload.backend.support.ResourcePool``)."""


@hookspec
def synchronize(device: NativeDevice, queue: NativeQueue, release: bool) -> None:
    """Block until ``queue`` has no pending work, then raise its asynchronous errors, if any (one
    exception, or an ``ExceptionGroup`` of all of them: each is kept).

    With ``release`` the queue is finished: free it (no thread of it may outlive this call); without
    it the queue stays usable (the core uses that before reusing a parked queue). ``release`` may
    come from a host function running on the queue itself (the final ``olShutDown`` called there):
    then drop the work queued behind that function without waiting for it, and let the queue's
    thread end once the function returns (``backend_support.HostFunctions.synchronize``).
    """


@hookspec
def has_pending_work(device: NativeDevice, queue: NativeQueue) -> bool:
    """Whether ``queue`` has work queued or running; True while that cannot be known yet. Must not
    block: the core polls it (``olMemFree``, ``olDestroyProgram``, interpreter exit) to wait for a
    queue it does not own without enqueuing anything on it or taking its errors. When it can never
    be known (the device is lost) raise ``OffloadError(BACKEND_FAILURE)`` instead: the poll ends
    with that error."""


@hookspec
def enqueue_host_call(device: NativeDevice, queue: NativeQueue, callback: Callable[[], None]) -> None:
    """Run ``callback()`` in queue order: after all earlier work, before all later work. An exception
    from it is an asynchronous error of the queue (kept in order: ``backend_support.KeptErrors``)."""


# --- events ----------------------------------------------------------------------------------


@hookspec
def create_event(device: NativeDevice, queue: NativeQueue) -> NativeEvent:
    """Create and record an event on ``queue``: complete once all earlier work is. Return it."""


@hookspec
def destroy_event(device: NativeDevice, event: NativeEvent) -> None:
    """Release an event."""


@hookspec
def wait_event(device: NativeDevice, queue: NativeQueue, event: NativeEvent) -> None:
    """Make later work on ``queue`` wait until ``event`` (of any queue of this backend) is complete."""


@hookspec
def is_event_complete(device: NativeDevice, event: NativeEvent) -> bool:
    """Whether ``event`` is complete. Must not block."""


@hookspec
def sync_event(device: NativeDevice, event: NativeEvent, queue: NativeQueue | None) -> None:
    """Block until ``event`` is complete, then raise the asynchronous errors of the work recorded
    before it on ``queue`` (the queue it was recorded on; None once that queue was destroyed, whose
    errors then go to the final ``olShutDown``), as ``synchronize`` would: those errors, every one
    in order. Whether ``synchronize`` raises them again is the backend's (the kit accepts both)."""


@hookspec
def event_elapsed_time(device: NativeDevice, start: NativeEvent, end: NativeEvent) -> float:
    """Milliseconds between two complete events of this device."""
