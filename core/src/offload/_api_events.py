"""Events: record, destroy, wait, info and elapsed time."""

from __future__ import annotations

from typing import Any

from . import _info
from ._api_common import fail
from ._enums import ErrorCode, EventInfo
from ._handles import Event, Queue
from ._runtime import Context


def olCreateEvent(ctx: Context, queue: Queue) -> Event:
    device = queue.device
    native = device.backend.create_event(device.native, queue.native)
    event: Event = Event._make(ctx, device=device, native=native, queue=queue, queue_id=queue.id)
    return event


def olDestroyEvent(ctx: Context, event: Event) -> None:
    device = event.device
    with device.lock:
        if event._ctx is None:
            raise fail(ErrorCode.INVALID_EVENT, f"{event!r} was destroyed")
        event._ctx = None
    if "destroy_event" in device.backend.implemented:
        device.backend.destroy_event(device.native, event.native)


def olSyncEvent(ctx: Context, event: Event) -> None:
    device = event.device
    device.backend.sync_event(device.native, event.native)


def event_info(ctx: Context, event: Event, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.EVENT_INFO, EventInfo, prop, "olGetEventInfo")
    kind = _info.EVENT_INFO[prop][0]
    if prop is EventInfo.QUEUE:
        return event.queue, kind
    device = event.device
    return bool(device.backend.is_event_complete(device.native, event.native)), kind


def olGetEventElapsedTime(ctx: Context, start: Event, end: Event) -> float:
    if start.device is not end.device:
        raise fail(ErrorCode.INVALID_DEVICE, "StartEvent and EndEvent must belong to the same device")
    device = start.device
    return float(device.backend.event_elapsed_time(device.native, start.native, end.native))
