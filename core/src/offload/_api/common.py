"""What every section of the ``ol*`` implementation shares: argument conversion and errors,
and releasing a resource only after the queued work that may use it.

Each ``_api_<section>`` module follows a section of ``hookspecs`` and holds the ``_impl`` layer of
its functions (liboffload's ``<fn>_impl``): each takes the live ``Session`` first and the Python
arguments after it. By the time it runs, the generated entry point (``_api.functions``) has checked
initialisation, run the validation conditions of ``_api.table`` and checked that every handle
argument is live and of its kind. What is left there is the semantics: enum ranges, kind and
ownership rules, routing to the backend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._core.handles import Device
from .._core.ranges import ADDRESS_LIMIT, as_address, as_size, wait_for_grace
from .._core.session import LOCAL, Session

ctx_lock = threading.Lock()  # guards Session.orphan_errors


def fail(code: ErrorCode, details: str) -> OffloadError:
    """The error to raise (``raise fail(...)``)."""
    return OffloadError(code, details)


_T = TypeVar("_T")


def callback_arg(callback: Any) -> None:
    """An ``olIterate*`` callback must be callable (``INVALID_ARGUMENT`` otherwise)."""
    if not callable(callback):
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Callback must be callable, got {callback!r}")


def call_each(items: Iterable[_T], callback: Callable[[_T, Any], bool], user_data: Any) -> None:
    """``callback(item, user_data)`` per item until it returns False, counted as inside an
    ``olIterate*`` callback (which may call any function, the final ``olShutDown`` included)."""
    LOCAL.iterating += 1
    try:
        for item in items:
            if not callback(item, user_data):
                return
    finally:
        LOCAL.iterating -= 1


def address_arg(value: Any, name: str) -> int:
    """An address argument as an int: an in-range int as it is, anything else through ``as_address``."""
    if type(value) is int and 0 <= value < ADDRESS_LIMIT:
        return value
    return as_address(value, name)


def size_arg(value: Any, name: str) -> int:
    """A size argument as an int: an in-range int as it is, anything else through ``as_size``."""
    if type(value) is int and 0 <= value < ADDRESS_LIMIT:
        return value
    return as_size(value, name)


def bytes_arg(value: Any, name: str) -> bytes:
    """A private copy of a bytes-like argument."""
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"{name} must be bytes-like, got {type(value).__name__}") from None


def release_after_queued_work(
    ctx: Session, devices: Sequence[Device], release: Callable[[], None], holds: list[None]
) -> None:
    """Wait for the copies that held the memory before it was retired (``holds``, the grace period
    ``Session.grace`` began: none can enqueue work on it after that), then for every busy queue
    of ``devices``, then call ``release``; inside a host function, ``release`` is enqueued on its
    own queue instead (which cannot be waited for from inside). A device its backend reported
    faulted runs none of its queued work any more (and its queries fail with the fault): it has
    nothing to wait for."""
    wait_for_grace(holds)
    own = LOCAL.queue
    for device in devices:
        live, parked = tuple(device.queues), tuple(device.parked)  # copied atomically (GIL)
        if (not live and not parked) or device.fault is not None:
            continue
        backend, native = device.backend, device.native
        has_pending_work = backend.has_pending_work
        for native_queue in (*(q.native for q in live), *parked):
            if native_queue is not own and has_pending_work(native, native_queue):
                wait_for_queue(ctx, device, native_queue)
    if own is None:
        release()
    else:
        own_device = LOCAL.device
        own_device.backend.enqueue_host_call(own_device.native, own, release)


def wait_for_queue(ctx: Session, device: Device, native_queue: Any) -> None:
    """Wait until a queue has no pending work. Polls ``has_pending_work`` (with a growing sleep):
    nothing is enqueued on a queue this caller does not own, and its errors stay its owner's."""
    backend, native = device.backend, device.native
    delay = 0.00005
    while backend.has_pending_work(native, native_queue):
        time.sleep(delay)
        delay = min(delay * 2, 0.005)


def recorded_on(event: Any) -> Any:
    """The native queue ``event`` was recorded on while that queue is live, else None (destroyed:
    its work's errors go to the final ``olShutDown``): ``sync_event``'s ``queue``."""
    queue = event.queue
    return queue.native if queue._ctx is not None else None
