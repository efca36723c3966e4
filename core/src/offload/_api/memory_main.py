"""Memory functions after R1: ``olMemPrefetch`` (liboffload main), and ``olMemcpyRect`` and
``olMemIsAccessible`` (open upstream, asked for by users)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .._core.allocations import touching
from .common import address_arg, fail, size_arg
from .._core import ranges as _ranges
from .memory import _queue_for, olMemcpy, require_copy_hooks, transfer
from .._values.enums import AllocType, ErrorCode, MemMigrationFlag
from .._core.handles import Device, Queue
from .._core.ranges import ADDRESS_LIMIT, HOST_MAPPINGS, READ, WRITE, end_of
from .._core.session import Session
from .._values.types import Dimensions, Rect


def _migration_flags(flags: Any) -> MemMigrationFlag:
    if not isinstance(flags, int) and hasattr(type(flags), "__index__"):
        flags = operator.index(flags)
    if not isinstance(flags, int) or isinstance(flags, bool) or flags & ~3:
        raise fail(ErrorCode.INVALID_ENUMERATION, f"olMemPrefetch flags '{flags}' are invalid")
    return MemMigrationFlag(flags)


def olMemPrefetch(ctx: Session, queue: Queue, mems: Sequence[Any] | None, sizes: Sequence[Any] | None, flags: Any) -> None:
    """Hint that ranges migrate (HOST_TO_DEVICE: to the queue's device; DEVICE_TO_HOST: to the
    host), in queue order. Every range must lie in one allocation (INVALID_ARGUMENT, INVALID_SIZE);
    ranges of MANAGED allocations reach the backend's ``mem_prefetch`` (the others have nowhere to
    migrate); a backend without it ignores the hint, as liboffload does."""
    flags = _migration_flags(flags)
    mems, sizes = list(mems or ()), list(sizes or ())
    if len(mems) != len(sizes):
        raise fail(ErrorCode.INVALID_SIZE, f"Mems has {len(mems)} item(s) but Sizes has {len(sizes)}")
    ranges = []
    for i, (mem, size) in enumerate(zip(mems, sizes)):
        start, length = address_arg(mem, f"Mems[{i}]"), size_arg(size, f"Sizes[{i}]")
        end = end_of(start, length, f"Mems[{i}]")
        allocation = touching(ctx.allocations.snapshot, start, end)
        if allocation is None:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"Mems[{i}] {start:#x} is not in an allocation")
        if end > allocation.end or start < allocation.start:
            raise fail(ErrorCode.INVALID_SIZE, f"Mems[{i}] range [{start:#x}, {end:#x}) overruns its allocation")
        if allocation.alloc_type is AllocType.MANAGED:  # only managed memory migrates
            ranges.append((start, length))
    device = queue.device
    backend = device.backend
    if not ranges or "mem_prefetch" not in backend.implemented:
        return
    for start, length in ranges:
        if length:
            backend.mem_prefetch(device.native, queue.native, start, length, flags)


def olMemIsAccessible(ctx: Session, device: Device, ptr: Any, size: Any) -> bool:
    """Whether ``device`` can access the whole range: its own allocations, HOST and MANAGED
    allocations of its platform (a host device: of any platform, and any mapped host memory),
    its programs' global variables, and host memory registered with it."""
    start, length = address_arg(ptr, "Ptr"), size_arg(size, "Size")
    end = end_of(start, length, "Ptr")
    allocation = touching(ctx.allocations.snapshot, start, end)
    if allocation is None and not device.is_host:
        allocation = touching(ctx.globals.snapshot, start, end)
    if allocation is not None:
        if start < allocation.start or end > allocation.end:
            return False
        owner = allocation.device
        if owner is device:
            return True
        if device.is_host:
            return allocation.alloc_type is not AllocType.DEVICE or owner.is_host
        shared = allocation.alloc_type in (AllocType.HOST, AllocType.MANAGED)
        return shared and owner.platform is device.platform
    if device.is_host:
        return HOST_MAPPINGS.check(start, end, READ)
    with device.lock:
        return any(base <= start and end <= base + entry[0] for base, entry in device.registered.items())


def _rect(ctx: Session, value: Any, name: str) -> Rect:
    if not isinstance(value, Rect):
        raise fail(ErrorCode.INVALID_ARGUMENT, f"{name} must be an offload.Rect, got {type(value).__name__}")
    if address_arg(value.ptr, f"{name}.Ptr") == 0:
        raise fail(ErrorCode.INVALID_NULL_POINTER, f"NULL == {name}.Ptr")
    if value.device is None:
        raise fail(ErrorCode.INVALID_NULL_HANDLE, f"NULL == {name}.Device")
    if value.device.__class__ is not Device:
        raise fail(ErrorCode.INVALID_DEVICE, f"{name}.Device must be a Device handle, got {value.device!r}")
    if value.device._ctx is not ctx:
        raise fail(ErrorCode.INVALID_DEVICE, f"{name}.Device {value.device!r} is not a device of this session")
    return value


def _origin(rect: Rect, name: str, extent: Dimensions) -> tuple[int, int, int]:
    """(address of the region's first byte, row pitch, slice pitch) with the pitches checked against the extent."""
    base = address_arg(rect.ptr, f"{name}.Ptr")
    try:
        x, y, z = (size_arg(v, f"{name}.Offset") for v in rect.offset)
    except (TypeError, ValueError):
        raise fail(ErrorCode.INVALID_ARGUMENT, f"{name}.Offset must be three sizes (bytes, rows, slices)") from None
    row, slab = size_arg(rect.row_pitch, f"{name}.RowPitch"), size_arg(rect.slice_pitch, f"{name}.SlicePitch")
    if x + extent.x > row:
        raise fail(ErrorCode.INVALID_SIZE, f"{name}: offset {x} + {extent.x} bytes per row exceed RowPitch {row}")
    if extent.z > 1 and (y + extent.y) * row > slab:
        raise fail(
            ErrorCode.INVALID_SIZE, f"{name}: {y + extent.y} rows of RowPitch {row} exceed SlicePitch {slab}"
        )
    return base + z * slab + y * row + x, row, slab


def _rect_owner(dst: Device, src: Device) -> Device | None:
    """The device whose backend's ``data_copy_rect`` can do the whole copy: the one non-host side,
    or the one device both sides are on; None (row by row) otherwise or without the hook."""
    if dst.is_host and src.is_host:
        return None
    owner = src if dst.is_host else dst if src.is_host or src is dst else None
    return owner if owner is not None and "data_copy_rect" in owner.backend.implemented else None


def _span_end(origin: int, pitches: tuple[int, int], extent: Dimensions, name: str) -> int:
    """One past a region's last byte (INVALID_SIZE when it passes the 64-bit address space)."""
    row, slab = pitches
    end = origin + (extent.z - 1) * slab + (extent.y - 1) * row + extent.x
    if origin >= ADDRESS_LIMIT or end > ADDRESS_LIMIT:
        raise fail(ErrorCode.INVALID_SIZE, f"the {name} region [{origin:#x}, +{end - origin}) passes the end of the 64-bit address space")
    return end


def olMemcpyRect(ctx: Session, queue: Queue | None, dst: Any, src: Any, extent: Any) -> None:
    """Copy ``extent`` (bytes per row, rows, slices) between two pitched regions. Each region's
    whole span (its first byte to its last) is checked as one ``olMemcpy`` range before anything
    is copied or enqueued, so it lies in one allocation or one run of mappings (every row with it)
    or the copy is refused whole. Then one ``data_copy_rect`` call where a backend has it (host
    memory and one device, or one device's memory on both sides), else row by row; either way in
    queue order. An extent with a zero side is INVALID_SIZE (the table's check); with validation
    off it copies nothing."""
    dst, src = _rect(ctx, dst, "Dst"), _rect(ctx, src, "Src")
    try:
        extent = extent if type(extent) is Dimensions else Dimensions(*(size_arg(v, "Extent") for v in extent))
    except TypeError:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Extent must be Dimensions (bytes, rows, slices), got {extent!r}") from None
    if not (extent.x and extent.y and extent.z):
        return
    dst_origin, dst_row, dst_slab = _origin(dst, "Dst", extent)
    src_origin, src_row, src_slab = _origin(src, "Src", extent)
    if dst_row == src_row == extent.x and (extent.z == 1 or (dst_slab == src_slab == extent.x * extent.y)):
        olMemcpy(ctx, queue, dst_origin, dst.device, src_origin, src.device, extent.x * extent.y * extent.z)
        return  # both regions contiguous: one copy
    dst_end = _span_end(dst_origin, (dst_row, dst_slab), extent, "Dst")
    src_end = _span_end(src_origin, (src_row, src_slab), extent, "Src")
    require_copy_hooks(dst.device, src.device)
    holds = ctx.hold()  # what the spans' checks find safe stays so until the last row is copied
    try:
        _ranges.check_range(ctx.allocations, ctx.globals, "Dst region", dst_origin, dst_end, dst.device, WRITE)
        _ranges.check_range(ctx.allocations, ctx.globals, "Src region", src_origin, src_end, src.device, READ)
        owner = _rect_owner(dst.device, src.device)
        if owner is not None:
            owner.backend.data_copy_rect(
                owner.native, dst_origin, (dst_row, dst_slab), src_origin, (src_row, src_slab),
                (extent.x, extent.y, extent.z), _queue_for(queue, owner),
            )
            return
        for z in range(extent.z):
            for y in range(extent.y):
                transfer(
                    queue,
                    dst_origin + z * dst_slab + y * dst_row,
                    dst.device,
                    src_origin + z * src_slab + y * src_row,
                    src.device,
                    extent.x,
                )
    finally:
        holds.pop()
