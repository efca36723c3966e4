"""Contexts (liboffload main): devices of one platform grouped as the owner of allocations,
queues and programs. Every platform has a default context (all its devices), which calls made
without a context use, so R1 callers never see one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from .._values import info as _info
from .common import fail
from .devices import device_info_value
from .._values.enums import ContextInfo, DeviceInfo, ErrorCode
from .._core.handles import Context as ContextHandle
from .._core.handles import Device
from .._core.runtime import make_context
from .._core.session import Session


def context_for(ctx: Session, context: ContextHandle | None, device: Device) -> ContextHandle:
    """The context a call on ``device`` works in: the one given (which must hold ``device``:
    INVALID_DEVICE), else the default context of the device's platform."""
    if context is None:
        return device.platform.default_context
    if device not in context.devices:
        raise fail(ErrorCode.INVALID_DEVICE, f"device {device._describe()} does not belong to the given context {context!r}")
    return context


@contextlib.contextmanager
def context_owns(context: ContextHandle) -> Iterator[None]:
    """Make ``context`` own something inside the block: a created context is locked and must still
    be live (INVALID_CONTEXT otherwise), so exactly one of this and a racing ``olDestroyContext``
    succeeds (a default context is never destroyed: nothing to lock)."""
    if context.default:
        yield
        return
    with context.lock:
        if context._ctx is None:
            raise fail(ErrorCode.INVALID_CONTEXT, f"{context!r} was destroyed (by olDestroyContext)")
        yield


def _driver_id(device: Device) -> Any:
    return device_info_value(device, DeviceInfo.DRIVER_ID)


def olCreateContext(ctx: Session, devices: Sequence[Device]) -> ContextHandle:
    """A context over ``devices``: one platform, one driver ID (``OL_DEVICE_INFO_DRIVER_ID``)."""
    try:
        devices = tuple(devices)
    except TypeError:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Devices must be a sequence of Device, got {devices!r}") from None
    if not devices:
        raise fail(ErrorCode.INVALID_SIZE, "validation failure: DevicesCount == 0")
    for device in devices:
        if device is None:
            raise fail(ErrorCode.INVALID_NULL_HANDLE, "a device in Devices is NULL")
        if device.__class__ is not Device or device._ctx is not ctx:
            raise fail(ErrorCode.INVALID_DEVICE, f"{device!r} is not a live device")
    platform = devices[0].platform
    if any(d.platform is not platform for d in devices):
        raise fail(ErrorCode.INVALID_DEVICE, "all devices in a context must belong to the same platform")
    if len({_driver_id(d) for d in devices}) > 1:
        raise fail(ErrorCode.INVALID_DEVICE, "all devices in a context must have the same driver ID")
    return make_context(ctx, platform, devices, default=False)  # as listed, repeats kept (liboffload main)


def olDestroyContext(ctx: Session, context: ContextHandle) -> None:
    """Destroy a context that owns nothing any more; one that does is INVALID_CONTEXT, naming
    what it still owns (free, destroy or unload it first). A default context is never destroyed."""
    if context.default:
        raise fail(
            ErrorCode.INVALID_CONTEXT,
            f"{context!r} is the default context of platform {context.platform.name!r}: it lives as long as the session",
        )
    with context.lock:
        if context._ctx is None:
            raise fail(ErrorCode.INVALID_CONTEXT, f"{context!r} was destroyed")
        owned = _owned(ctx, context)
        if not owned:
            context._ctx = None
            return
    raise fail(ErrorCode.INVALID_CONTEXT, f"{context!r} still owns {owned}: release them before olDestroyContext")


def _owned(ctx: Session, context: ContextHandle) -> str:
    """What ``context`` still owns, in words ("" when nothing): found from the allocations, queues
    and programs, each of which records its context (no bookkeeping on their hot paths)."""
    allocations = sorted(a.start for a in ctx.allocations.snapshot[1] if a.owner is context and not a.retired)
    devices = dict.fromkeys(context.devices)  # a device listed twice owns its queues once
    queues = [q for d in devices for q in list(d.queues) if q.context is context]
    programs = [p for d in devices for p in list(d.programs) if p.context is context]
    parts = []
    if allocations:
        shown = ", ".join(f"{a:#x}" for a in allocations[:4]) + (", ..." if len(allocations) > 4 else "")
        parts.append(f"{len(allocations)} allocation(s) ({shown})")
    if queues:
        parts.append(f"{len(queues)} queue(s)")
    if programs:
        parts.append(f"{len(programs)} program(s)")
    return ", ".join(parts)


def context_info(ctx: Session, context: ContextHandle, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.CONTEXT_INFO, ContextInfo, prop, "olGetContextInfo", ctx.api_level)
    kind = _info.CONTEXT_INFO[prop][0]
    if prop is ContextInfo.NUM_DEVICES:
        return len(context.devices), kind
    if prop is ContextInfo.DEVICES:
        return list(context.devices), kind
    return context.platform, kind
