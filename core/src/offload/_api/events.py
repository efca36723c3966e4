"""Events: record, destroy, wait, info and elapsed time."""

from __future__ import annotations

from typing import Any

from .._values import info as _info
import operator

from .common import fail, recorded_on
from .._values.enums import ErrorCode, EventFlags, EventInfo
from .._core.handles import Event, Queue
from .._core.session import Session


def _event_flags(flags: Any) -> EventFlags:
    """An ``ol_event_flags_t`` (None: NONE); any other value is INVALID_ENUMERATION."""
    if flags is None:
        return EventFlags.NONE
    if not isinstance(flags, int) and hasattr(type(flags), "__index__"):
        flags = operator.index(flags)
    if isinstance(flags, int) and not isinstance(flags, bool):
        try:
            return EventFlags(flags)
        except ValueError:
            pass
    raise fail(ErrorCode.INVALID_ENUMERATION, f"olCreateEvent flags '{flags}' are invalid")


def olCreateEvent(ctx: Session, queue: Queue, flags: Any) -> Event:
    """Record an event; ``flags`` (EventFlags) ENABLE_PROFILING marks it for olGetEventElapsedTime,
    which requires it on both events at API level main (at R1 every event can be timed)."""
    profiling = _event_flags(flags) is EventFlags.ENABLE_PROFILING
    device = queue.device
    native = device.backend.create_event(device.native, queue.native)
    event: Event = Event._make(ctx, device=device, native=native, queue=queue, queue_id=queue.id, profiling=profiling)
    return event


def olDestroyEvent(ctx: Session, event: Event) -> None:
    device = event.device
    with device.lock:
        if event._ctx is None:
            raise fail(ErrorCode.INVALID_EVENT, f"{event!r} was destroyed")
        event._ctx = None
    if "destroy_event" in device.backend.implemented:
        device.backend.destroy_event(device.native, event.native)


def olSyncEvent(ctx: Session, event: Event) -> None:
    device = event.device
    device.backend.sync_event(device.native, event.native, recorded_on(event))


def event_info(ctx: Session, event: Event, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.EVENT_INFO, EventInfo, prop, "olGetEventInfo", ctx.api_level)
    kind = _info.EVENT_INFO[prop][0]
    if prop is EventInfo.QUEUE:
        return event.queue, kind
    device = event.device
    return bool(device.backend.is_event_complete(device.native, event.native)), kind


def olGetEventElapsedTime(ctx: Session, start: Event, end: Event) -> float:
    if ctx.api_level == "main" and not (start.profiling and end.profiling):
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            "olGetEventElapsedTime requires both events to be created with OL_EVENT_FLAGS_ENABLE_PROFILING",
        )
    if start.device is not end.device:
        raise fail(ErrorCode.INVALID_DEVICE, "StartEvent and EndEvent must belong to the same device")
    device = start.device
    return float(device.backend.event_elapsed_time(device.native, start.native, end.native))
