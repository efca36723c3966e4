"""Queues: creation (reusing finished parked queues), adoption of another library's stream,
destruction (parking busy ones), waits, host functions, the queue info query, and letting queued
work finish at interpreter exit."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._values import info as _info
from .common import ctx_lock, fail, recorded_on
from .._core.drain import RUNNING_HOST_FUNCTIONS, Drain, host_function_name, pending_work, shutdown_timeout
from .._values.enums import ErrorCode, QueueInfo
from .._values.errors import OffloadError, as_offload_error
from .contexts import context_for, context_owns
from .._core.handles import Context as ContextHandle
from .._core.handles import Device, Event, Queue
from .._core.native import word as native_word
from .._core.session import LOCAL, PARKED_IDLE_LIMIT, STATE, Session
from .memory_async import release_kept


def olCreateQueue(ctx: Session, device: Device, context: ContextHandle | None) -> Queue:
    """A new queue, or a finished parked one reused; an asynchronous error that a parked queue
    still holds belongs to its destroyed owner, so it is kept for the final ``olShutDown``, never
    given to this caller (and that queue is released instead of reused). The queue belongs to
    ``context`` (default: the device's platform's)."""
    owner = context_for(ctx, context, device)
    backend, native = device.backend, device.native
    native_queue = None
    while native_queue is None:
        reused = None
        with device.lock:
            for i in range(len(device.parked) - 1, -1, -1):  # newest first: long runners drift to the front
                if id(device.parked[i]) not in device.adopted and not backend.has_pending_work(native, device.parked[i]):
                    reused = device.parked.pop(i)
                    break
        if reused is None:
            native_queue = backend.create_queue(native)
            break
        try:
            backend.synchronize(native, reused, False)
            native_queue = reused
        except Exception as exc:
            _orphan(ctx, exc, f"{device.platform.name}: a destroyed queue failed")
            _release_native_queue(ctx, device, reused)
    return _register(ctx, device, native_queue, owner)


def adopt_queue(ctx: Session, device: Device, stream: int, context: ContextHandle | None) -> Queue:
    """A queue over another library's driver stream (``adopt_stream``): a queue like any other,
    except that it is never reused once destroyed and its stream is never destroyed (the backend's
    promise); a busy destroyed one is parked until idle, then released."""
    owner = context_for(ctx, context, device)
    native_queue = device.backend.adopt_stream(device.native, stream)
    with device.lock:
        device.adopted.add(id(native_queue))
    return _register(ctx, device, native_queue, owner)


def _register(ctx: Session, device: Device, native_queue: Any, owner: ContextHandle) -> Queue:
    queue: Queue = Queue._make(
        ctx, device=device, native=native_queue, id=next(ctx.queue_ids), context=owner, word=native_word(device, native_queue)
    )
    try:
        with context_owns(owner), device.lock:  # exactly one of this and a racing olDestroyContext succeeds
            device.queues.add(queue)
    except OffloadError:
        queue._ctx = None
        _release_native_queue(ctx, device, native_queue)
        raise
    if device.parked:
        _release_surplus_parked(ctx, device)
    return queue


def _orphan(ctx: Session, exc: BaseException, what: str) -> None:
    """Keep an error that no live caller owns (a destroyed queue's) for the final olShutDown."""
    error = as_offload_error(exc, what)
    with ctx_lock:
        ctx.orphan_errors.append(error)


def _release_native_queue(ctx: Session, device: Device, native_queue: Any) -> None:
    try:
        device.backend.synchronize(device.native, native_queue, True)
    except Exception as exc:
        _orphan(ctx, exc, f"{device.platform.name}: releasing a destroyed queue")
    finally:
        with device.lock:
            device.adopted.discard(id(native_queue))


def olDestroyQueue(ctx: Session, queue: Queue) -> None:
    """Destroy a queue: its enqueued work still runs (the queue is parked until it has), and an
    error of that work reaches the final ``olShutDown``. A finished queue's errors are raised here.
    A queue whose query fails is parked for the final ``olShutDown``, which releases it and
    reports its errors; on a device its backend reported faulted (which answers every query with
    the fault) the destroy itself then succeeds."""
    device = queue.device
    backend, native = device.backend, device.native
    if len(device.pool):
        try:
            release_kept(ctx, queue)  # the blocks olMemFreeAsync kept for it, freed in its order
        except Exception as exc:
            _orphan(ctx, exc, f"{device.platform.name}: freeing the memory a destroyed queue kept")
    with device.lock:
        if queue._ctx is None:  # lost a race with another olDestroyQueue
            raise fail(ErrorCode.INVALID_QUEUE, f"{queue!r} was destroyed")
        queue._ctx = None
        device.queues.discard(queue)
    try:
        busy = backend.has_pending_work(native, queue.native)
    except BaseException:  # kept reachable: the final olShutDown releases it and reports its errors
        with device.lock:
            device.parked.append(queue.native)
        if device.fault is None:
            raise
        return  # (a faulted device answers its fault to every query: nothing of it runs any more)
    if not busy and LOCAL.queue is not queue.native:
        try:
            backend.synchronize(native, queue.native, True)
        finally:
            with device.lock:
                device.adopted.discard(id(queue.native))
        return
    with device.lock:
        device.parked.append(queue.native)
    _release_surplus_parked(ctx, device)


def _release_surplus_parked(ctx: Session, device: Device) -> None:
    """Release the oldest finished parked queues beyond PARKED_IDLE_LIMIT (kept for reuse); every
    one is released whatever fails, and failures are kept for the final olShutDown (a faulted
    device's: all of them, there)."""
    backend, native = device.backend, device.native
    if device.fault is not None:
        return
    with device.lock:
        idle = [q for q in device.parked if q is not LOCAL.queue and not backend.has_pending_work(native, q)]
        adopted = [q for q in idle if id(q) in device.adopted]  # never reused: released once idle
        idle = [q for q in idle if id(q) not in device.adopted]
        surplus = adopted + idle[: max(0, len(idle) - PARKED_IDLE_LIMIT)]
        for q in surplus:
            device.parked.remove(q)
    for q in surplus:
        _release_native_queue(ctx, device, q)


def olSyncQueue(ctx: Session, queue: Queue) -> None:
    device = queue.device
    device.backend.synchronize(device.native, queue.native, False)


def olQueryQueue(ctx: Session, queue: Queue) -> bool:
    device = queue.device
    return not device.backend.has_pending_work(device.native, queue.native)


def olWaitEvents(ctx: Session, queue: Queue, events: Sequence[Event]) -> None:
    try:
        events = list(events)
    except TypeError:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Events must be a sequence of Event, got {events!r}") from None
    for event in events:  # check every event before enqueuing anything
        if event is None:
            raise fail(ErrorCode.INVALID_NULL_HANDLE, "olWaitEvents asked to wait on a NULL event")
        if event.__class__ is not Event or event._ctx is not ctx:
            raise fail(ErrorCode.INVALID_EVENT, f"{event!r} is not a live event")
    device = queue.device
    for event in events:
        if event.queue_id == queue.id:
            continue  # in-order queue: already waited for
        if event.device.backend is device.backend:
            device.backend.wait_event(device.native, queue.native, event.native)
        else:
            other = event.device
            device.backend.enqueue_host_call(
                device.native, queue.native, functools.partial(other.backend.sync_event, other.native, event.native, recorded_on(event))
            )


def queue_info(ctx: Session, queue: Queue, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.QUEUE_INFO, QueueInfo, prop, "olGetQueueInfo", ctx.api_level)
    kind = _info.QUEUE_INFO[prop][0]
    if prop is QueueInfo.DEVICE:
        return queue.device, kind
    if prop is QueueInfo.CONTEXT:
        return queue.context, kind
    device = queue.device
    return not device.backend.has_pending_work(device.native, queue.native), kind


def olLaunchHostFunction(ctx: Session, queue: Queue, callback: Callable[[Any], None], user_data: Any) -> None:
    if not callable(callback):
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Callback must be callable, got {callback!r}")
    device = queue.device
    device.backend.enqueue_host_call(
        device.native, queue.native, functools.partial(_run_host_function, device, queue.native, callback, user_data)
    )


def _run_host_function(device: Device, native_queue: Any, callback: Callable[[Any], None], user_data: Any) -> None:
    """Run a host function, marking its thread as running ``native_queue``'s work (calls made from
    it then never wait for that queue, which could not finish before they return)."""
    local = LOCAL
    previous = local.queue, local.device
    local.queue, local.device = native_queue, device
    key = id(native_queue)
    RUNNING_HOST_FUNCTIONS[key] = host_function_name(callback)  # what a teardown that gives up reports
    try:
        callback(user_data)
    finally:
        RUNNING_HOST_FUNCTIONS.pop(key, None)
        local.queue, local.device = previous


def finish_queued_work_at_exit() -> None:
    """At interpreter exit without the final ``olShutDown``, let every queue (live or parked)
    finish the work already enqueued on it; release nothing, since atexit handlers that run later
    may still use the library. What cannot be finished is named in a warning on stderr."""
    ctx = STATE.ctx
    if ctx is None:
        return
    dropped: list[str] = []
    drain = Drain(shutdown_timeout([]), lambda: 0)  # Ctrl-C here is a KeyboardInterrupt, kept below
    for device in list(ctx.devices):
        with device.lock:
            natives = [(f"queue #{q.id}", q.native) for q in device.queues]
            natives += [("a destroyed (parked) queue", q) for q in device.parked]
        for label, native_queue in natives:
            try:
                if not drain.wait(functools.partial(device.backend.has_pending_work, device.native, native_queue)):
                    dropped.append(f"{label} of {device._describe()}: {pending_work(native_queue)} ({drain.given_up})")
            except BaseException as exc:  # noqa: B036 - exit goes on; say what was lost
                dropped.append(f"{label} of {device._describe()}: {type(exc).__name__}: {exc}")
    if dropped:
        print(
            "offload: at exit without olShutDown, queued work was not finished on " + "; ".join(dropped),
            file=sys.stderr,
        )
