"""Memory: allocation, registration, ``olMemcpy`` and ``olMemFill``. Every range a copy or fill
touches is checked by ``_core.ranges`` before anything reaches a backend."""

from __future__ import annotations

import ctypes
import functools
import operator
from typing import Any

from .._values import info as _info
from .._compiled import interface as _verdicts
from .._core import ranges as _ranges
from .._core.allocations import Allocation
from .common import address_arg, bytes_arg, fail, release_after_queued_work, size_arg
from .contexts import context_for, context_owns
from .._values.enums import AllocType, ErrorCode, MemInfo, MemoryRegisterFlag
from .._core.handles import Context as ContextHandle
from .._core.handles import Device, Queue
from .._core.ranges import ADDRESS_LIMIT, HOST_MAPPINGS, WRITE, end_of
from .._core.session import Session
from .._values.types import HostCopy

MAX_ALLOC_TRIES = 50

_memmove = ctypes.memmove
_ALLOC_TYPES = frozenset(AllocType)
# From this size a synchronous host-to-host copy goes to the host device's data_submit (whose
# backend may split it over its threads: the host backend's pool copies 64 MiB in half the time
# of one memmove on 2 cores); smaller ones are one memmove here.
_BIG_HOST_COPY = 4 << 20


def olMemAlloc(ctx: Session, device: Device, alloc_type: Any, size_value: Any, context: ContextHandle | None) -> int:
    alloc_type = _info.lookup(_ALLOC_TYPES, AllocType, alloc_type, "olMemAlloc type", ctx.api_level)
    if alloc_type is AllocType.HOST and ctx.api_level == "main":
        raise fail(ErrorCode.INVALID_ENUMERATION, "use olMemAllocHost for host allocations")
    return allocate(ctx, device, alloc_type, size_arg(size_value, "Size"), context_for(ctx, context, device), 0)


def olMemAllocHost(ctx: Session, device: Device, size: Any, context: ContextHandle | None) -> int:
    return allocate(ctx, device, AllocType.HOST, size_arg(size, "Size"), context_for(ctx, context, device), 0)


def olMemAllocAligned(
    ctx: Session, device: Device, alloc_type: Any, size: Any, alignment: Any, context: ContextHandle | None
) -> int:
    alloc_type = _info.lookup(_ALLOC_TYPES, AllocType, alloc_type, "olMemAllocAligned type", ctx.api_level)
    if alloc_type is AllocType.HOST and ctx.api_level == "main":
        raise fail(ErrorCode.INVALID_ENUMERATION, "use olMemAllocAlignedHost for host allocations")
    return allocate(ctx, device, alloc_type, size_arg(size, "Size"), context_for(ctx, context, device), _alignment(alignment))


def olMemAllocAlignedHost(ctx: Session, device: Device, size: Any, alignment: Any, context: ContextHandle | None) -> int:
    return allocate(
        ctx, device, AllocType.HOST, size_arg(size, "Size"), context_for(ctx, context, device), _alignment(alignment)
    )


def _alignment(value: Any) -> int:
    """An alignment argument: a power of two (INVALID_ARGUMENT otherwise, with validation off too)."""
    alignment = size_arg(value, "Alignment")
    if alignment == 0 or alignment & (alignment - 1):
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Alignment {alignment} is not a power of two")
    return alignment


def _allocate_once(device: Device, alloc_type: AllocType, size: int, alignment: int) -> int:
    """One backend allocation: ``mem_alloc_aligned`` where the backend has it, else ``mem_alloc``,
    whose address must then happen to be aligned (UNSUPPORTED, naming the device, if not)."""
    backend, native = device.backend, device.native
    if alignment > 1 and "mem_alloc_aligned" in backend.implemented:
        return int(backend.mem_alloc_aligned(native, alloc_type, size, alignment))
    address = backend.mem_alloc(native, alloc_type, size)
    if alignment > 1 and address and address % alignment:
        backend.mem_free(native, address, alloc_type)
        raise fail(
            ErrorCode.UNSUPPORTED,
            f"{device.platform.name}:{device.index} cannot allocate {alloc_type.name} memory aligned to {alignment} "
            f"bytes (its allocations are aligned to less; got {address:#x})",
        )
    return int(address) if address else 0


def allocate(ctx: Session, device: Device, alloc_type: AllocType, size: int, context: ContextHandle, alignment: int) -> int:
    """Allocate ``size`` bytes owned by ``context``, outside every live allocation of every device
    (rejected blocks are kept until one fits, then freed, as liboffload R1 does)."""
    backend, native = device.backend, device.native
    rejected: list[int] = []
    try:
        for _ in range(MAX_ALLOC_TRIES):
            try:
                address = _allocate_once(device, alloc_type, size, alignment)
            except MemoryError as exc:
                raise fail(
                    ErrorCode.OUT_OF_RESOURCES,
                    f"{device.platform.name}:{device.index} could not allocate {size} bytes ({size:#x}) of "
                    f"{alloc_type.name} memory: {exc or 'out of memory'}",
                ) from exc
            if not address:
                raise fail(ErrorCode.OUT_OF_RESOURCES, f"{device.platform.name} could not allocate {size} bytes")
            inserted = False
            try:
                with context_owns(context):  # a racing olDestroyContext sees the allocation, or this sees the destroy
                    inserted = ctx.allocations.insert(Allocation(device, alloc_type, address, address + size, context))
            finally:
                if not inserted:  # overlaps another device's allocation (keep it out of reach), or no context
                    rejected.append(address)
            if inserted:
                return int(address)
        raise fail(ErrorCode.BACKEND_FAILURE, "failed to allocate non-overlapping memory")
    finally:
        for address in rejected:
            backend.mem_free(native, address, alloc_type)


def olMemFree(ctx: Session, address: Any, context: ContextHandle | None) -> None:
    """Free an allocation once nothing can still use it. It is retired first (every range check
    refuses it from then on), then the copies that checked it before are waited for, then every
    busy queue (live or parked, of every device), as the CUDA driver's implicit synchronisation
    does; then the memory is given back and only then is the range cache dropped. Called from a
    host function, the give-back is queued behind its own queue's work instead. A context given
    must be the one the allocation was made in (INVALID_CONTEXT)."""
    found = ctx.allocations.at(address) if type(address) is int else None
    if found is not None and context is not None and found.owner is not context:
        raise fail(ErrorCode.INVALID_CONTEXT, f"the allocation {address:#x} was not made in Context {context!r}")
    if found is not None and "mem_free" not in found.device.backend.implemented:
        found.device.backend.mem_free(found.device.native, address, found.alloc_type or AllocType.DEVICE)  # raises UNSUPPORTED
    allocation = ctx.allocations.retire(address) if found is not None else None
    if allocation is None:  # liboffload's words exactly (the trace line shows the address)
        raise fail(ErrorCode.INVALID_ARGUMENT, "address is not a known allocation")
    holds = ctx.grace()
    release = functools.partial(_give_back, ctx, allocation)
    release_after_queued_work(ctx, ctx.devices, release, holds)


def _give_back(ctx: Session, allocation: Allocation) -> None:
    """Free a retired allocation's memory, then drop what the range checks knew of it: the view of
    the mappings (the pages may be unmapped now), then the retired range itself."""
    device = allocation.device
    # ctx.allocations holds olMemAlloc's allocations only (a global variable, of no AllocType, is in ctx.globals)
    alloc_type: AllocType = allocation.alloc_type  # type: ignore[assignment]
    try:
        device.backend.mem_free(device.native, allocation.start, alloc_type)
    finally:
        HOST_MAPPINGS.forget()
        ctx.allocations.discard([allocation])


def mem_info(
    ctx: Session, ptr: Any, prop: Any, context: ContextHandle | None = None, *, size_only: bool = False
) -> tuple[Any, _info.Kind]:
    """A property of the allocation holding ``ptr``. ``size_only`` (olGetMemInfoSize): at API level
    main the DEVICE of a HOST allocation is refused as a value only; its size is still
    ``sizeof(ol_device_handle_t)``, as liboffload main answers (its check needs a PropValue)."""
    prop = _info.lookup(_info.MEM_INFO, MemInfo, prop, "olGetMemInfo", ctx.api_level)
    allocation = ctx.allocations.find(ptr) if type(ptr) is int else None
    if allocation is None or (context is not None and allocation.owner is not context):
        # liboffload's words exactly (the trace line shows the pointer)
        raise fail(ErrorCode.NOT_FOUND, "allocated memory information not found")
    kind = _info.MEM_INFO[prop][0]
    if prop is MemInfo.DEVICE:
        if ctx.api_level == "main" and allocation.alloc_type is AllocType.HOST and not size_only:
            raise fail(ErrorCode.INVALID_ARGUMENT, "OL_MEM_INFO_DEVICE is not valid for host allocations")
        return allocation.device, kind
    if prop is MemInfo.BASE:
        return allocation.start, kind
    if prop is MemInfo.SIZE:
        return allocation.end - allocation.start, kind
    return allocation.alloc_type, kind


def mem_info_size(ctx: Session, ptr: Any, prop: Any, context: ContextHandle | None = None) -> tuple[Any, _info.Kind]:
    """``mem_info`` for olGetMemInfoSize."""
    return mem_info(ctx, ptr, prop, context, size_only=True)


def _register_flags(flags: Any) -> MemoryRegisterFlag:
    if not isinstance(flags, int) and hasattr(type(flags), "__index__"):
        flags = operator.index(flags)
    if not isinstance(flags, int) or flags & ~0b11:
        raise fail(ErrorCode.INVALID_ENUMERATION, f"memory register flags '{flags}' are invalid")
    return MemoryRegisterFlag(flags)


def olMemRegister(ctx: Session, device: Device, ptr: Any, size: Any, flags: Any) -> int:
    """Register host memory with ``device``. The core counts users per range: registering inside
    a registered range adds a user (the backend is not called again); a partial overlap is
    ``INVALID_ARGUMENT``."""
    flags = _register_flags(flags)
    ptr, size = address_arg(ptr, "Ptr"), size_arg(size, "Size")
    end = end_of(ptr, size, "Ptr")
    lock = bool(flags & MemoryRegisterFlag.LOCK_MEMORY)
    with device.lock:
        for base, entry in device.registered.items():
            if base <= ptr and end <= base + entry[0]:
                entry[1] += 1
                return int(ptr)
            if base < end and ptr < base + entry[0]:
                raise fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"[{ptr:#x}, {end:#x}) partially overlaps the registered range [{base:#x}, {base + entry[0]:#x})",
                )
        pinned = int(device.backend.mem_register(device.native, ptr, size, lock))
        device.registered[ptr] = [size, 1, lock]
    return pinned


def olMemUnregister(ctx: Session, device: Device, ptr: Any, flags: Any) -> None:
    """Drop one user of the registered range holding ``ptr``; the last one unregisters it."""
    flags = _register_flags(flags)
    ptr = address_arg(ptr, "Ptr")
    backend = device.backend
    if "mem_unregister" not in backend.implemented:
        backend.mem_unregister(device.native, ptr, 0, False)  # raises UNSUPPORTED
    with device.lock:
        for base, entry in device.registered.items():
            if base <= ptr < base + entry[0]:
                break
        else:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"{ptr:#x} is not registered memory")
        entry[1] -= 1
        if entry[1]:
            return
        del device.registered[base]
        unlock = entry[2] and bool(flags & MemoryRegisterFlag.UNLOCK_MEMORY)
        backend.mem_unregister(device.native, base, entry[0], unlock)


def olMemcpy(
    ctx: Session, queue: Queue | None, dst: Any, dst_device: Device, src: Any, src_device: Device, size: Any
) -> None:
    """Copy ``size`` bytes. Both ranges are checked first (``_core.ranges``): the addresses, the size and
    both ends once, by one test here, then each range against the allocations and the host's
    mappings; with a queue the copy runs in queue order, and the memory it uses is kept alive
    until it has run (``olMemFree`` waits). The copy holds what it checked until it ends
    (``ctx.hold()``). A zero-byte copy does nothing. The route a copy took is published for the
    compiled path (``_compiled.interface``), which replays it for the next copies it covers."""
    holds = ctx.holds
    holds.append(None)
    try:
        if dst.__class__ is not int or src.__class__ is not int:
            dst, src = address_arg(dst, "DstPtr"), address_arg(src, "SrcPtr")
        bits = dst | src | size
        dst_end, src_end = dst + size, src + size
        if bits < 0 or bits >= ADDRESS_LIMIT or dst_end > ADDRESS_LIMIT or src_end > ADDRESS_LIMIT:
            _ranges.refuse_copy_values(dst, src, size)
        if not size:
            return  # nothing to copy, nothing to order
        require_copy_hooks(dst_device, src_device)
        if queue is not None and queue.device.fault is not None:  # (a fault publishes a new snapshot: no route survives)
            fault = queue.device.fault
            raise fail(
                ErrorCode.BACKEND_FAILURE,
                f"Queue {queue!r} is a queue of {queue.device._describe()}, which faulted (it takes no more work until "
                f"olShutDown): {fault.details}",
            )
        snapshot = ctx.allocations.snapshot
        _ranges.check_copy(ctx.allocations, ctx.globals, dst, dst_end, dst_device, src, src_end, src_device)
        route = transfer(queue, dst, dst_device, src, src_device, size)
        if route is not None and _verdicts.ENABLED:
            _verdicts.publish_route(snapshot, dst_device, src_device, queue, *route, *_ranges.hot_slots(dst_device, src_device))
    finally:
        holds.pop()


def require_copy_hooks(dst_device: Device, src_device: Device) -> None:
    """UNSUPPORTED (naming the backend and hook) before any range check when a device of the copy
    has no hook to move its side of the data: no address of it could be valid anyway."""
    if not dst_device.is_host:
        dst_hooks = dst_device.backend.implemented
        if src_device.is_host:
            if "data_submit" in dst_hooks:
                return  # (the common pair first)
        elif dst_device.backend is src_device.backend and "data_exchange" in dst_hooks:
            return
        if "data_submit" not in dst_hooks:
            dst_device.backend.data_submit(dst_device.native, 0, 0, 0, None)  # raises UNSUPPORTED
    if not src_device.is_host and "data_retrieve" not in src_device.backend.implemented:
        src_device.backend.data_retrieve(src_device.native, 0, 0, 0, None)  # raises UNSUPPORTED


def transfer(
    queue: Queue | None, dst: int, dst_device: Device, src: int, src_device: Device, size: int
) -> tuple[int, int] | None:
    """Move ``size`` (> 0) bytes between ranges already checked, through the hook that serves the
    pair. Return the route it took as ``(kind, limit)`` (``_compiled.interface``: the same copy of
    fewer than ``limit`` bytes always goes this way), or None where the way depends on more."""
    if dst_device.is_host and src_device.is_host:
        if queue is not None:
            qdev = queue.device
            qdev.backend.enqueue_host_call(qdev.native, queue.native, HostCopy(dst, src, size))
            return None
        big = "data_submit" in dst_device.backend.implemented
        if size >= _BIG_HOST_COPY and big:
            dst_device.backend.data_submit(dst_device.native, dst, src, size, None)
        else:
            _memmove(dst, src, size)
        return _verdicts.ROUTE_MEMMOVE, _BIG_HOST_COPY if big else _verdicts.NO_LIMIT
    if src_device.is_host:
        owner, kind = dst_device, _verdicts.ROUTE_SUBMIT
    elif dst_device.is_host:
        owner, kind = src_device, _verdicts.ROUTE_RETRIEVE
    else:
        return _memcpy_device_to_device(queue, dst, dst_device, src, src_device, size)
    backend = owner.backend
    replayable = queue is None or queue.device.backend is backend
    qnative = _queue_for(queue, owner)
    if owner is dst_device:
        backend.data_submit(owner.native, dst, src, size, qnative)
    else:
        backend.data_retrieve(owner.native, dst, src, size, qnative)
    return (kind, _verdicts.NO_LIMIT) if replayable else None


def _queue_for(queue: Queue | None, device: Device) -> Any:
    """The native queue to order work on ``device``: a queue of another backend is drained first."""
    if queue is None:
        return None
    if queue.device.backend is device.backend:
        return queue.native
    qdev = queue.device
    qdev.backend.synchronize(qdev.native, queue.native, False)
    return None


def _memcpy_device_to_device(
    queue: Queue | None, dst: int, dst_device: Device, src: int, src_device: Device, size: int
) -> tuple[int, int] | None:
    backend = src_device.backend
    if backend is dst_device.backend and "data_exchange" in backend.implemented:
        replayable = queue is None or queue.device.backend is backend
        backend.data_exchange(src_device.native, src, dst_device.native, dst, size, _queue_for(queue, src_device))
        return (_verdicts.ROUTE_EXCHANGE, _verdicts.NO_LIMIT) if replayable else None
    if queue is not None:  # bounce through the host, after the queue's earlier work
        queue.device.backend.synchronize(queue.device.native, queue.native, False)
    bounce = (ctypes.c_char * size)()
    address = ctypes.addressof(bounce)
    src_device.backend.data_retrieve(src_device.native, address, src, size, None)
    dst_device.backend.data_submit(dst_device.native, dst, address, size, None)
    return None


def fill_device(queue: Queue | None, allocation: Allocation | None) -> Device:
    """The fill rule's device for a fill inside ``allocation`` (None: memory outside the map) on
    ``queue`` (None: synchronous, where ``allocation`` is given): the queue's, which must be the
    allocation's unless both are host devices (INVALID_DEVICE); else the allocation's."""
    if queue is None:
        assert allocation is not None
        return allocation.device
    device = queue.device
    if allocation is not None and allocation.device is not device and not (allocation.device.is_host and device.is_host):
        raise fail(ErrorCode.INVALID_DEVICE, "the destination pointer and queue belong to different devices")
    return device


def publish_fill_verdict(snapshot: Any, queue: Queue | None, allocation: Allocation, device: Device) -> None:
    """The fill verdict: in ``snapshot``, where the range check finds ``allocation`` itself for a
    write, a whole-pattern fill inside it on ``queue`` is ``device``'s ``data_fill`` (``device``:
    ``fill_device``'s answer). Published by ``olMemFill`` after such a fill, and by an allocation
    for the snapshot that made it live, so its first fill is replayed too."""
    if _verdicts.ENABLED:
        _verdicts.publish_fill(snapshot, queue, allocation.start, allocation.end, device)


def olMemFill(ctx: Session, queue: Queue | None, ptr: Any, pattern: Any, fill_size: Any) -> None:
    """Fill ``fill_size`` bytes at ``ptr``; the range is checked first, as for ``olMemcpy``."""
    ptr, fill_size = address_arg(ptr, "Ptr"), size_arg(fill_size, "FillSize")
    end = end_of(ptr, fill_size, "Ptr")
    pattern = bytes_arg(pattern, "PatternPtr")
    if not pattern or (fill_size % len(pattern) and ctx.validate):
        raise fail(ErrorCode.INVALID_SIZE, f"FillSize {fill_size} is not a multiple of PatternSize {len(pattern)}")
    allocation = ctx.allocations.find(ptr)
    if queue is None and allocation is None:
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"{ptr:#x} is not an olMemAlloc allocation, so a synchronous olMemFill cannot tell its device; pass a queue",
        )
    device = fill_device(queue, allocation)
    native_queue = None if queue is None else queue.native
    if not fill_size:
        return
    holds = ctx.hold()  # what the check finds safe stays so until the fill ends
    try:
        snapshot = ctx.allocations.snapshot
        found = _ranges.check_range(ctx.allocations, ctx.globals, "Ptr", ptr, end, device if allocation is None else allocation.device, WRITE)
        whole = fill_size - fill_size % len(pattern)
        if whole:
            device.backend.data_fill(device.native, ptr, pattern, whole, native_queue)
            if found is allocation is not None:  # (any whole-pattern fill inside this allocation goes the same way)
                publish_fill_verdict(snapshot, queue, allocation, device)
        if whole < fill_size:  # validation off: the last pattern written in part, as liboffload does
            tail = pattern[: fill_size - whole]
            device.backend.data_fill(device.native, ptr + whole, tail, len(tail), native_queue)
    finally:
        holds.pop()
