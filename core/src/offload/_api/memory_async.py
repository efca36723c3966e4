"""Stream-ordered memory, an offload extension (liboffload has none): ``olMemAllocAsync`` and
``olMemFreeAsync``, with the allocation map and the range checks as strict as for ``olMemAlloc``.

A backend with ``mem_alloc_async`` / ``mem_free_async`` (CUDA: ``cuMemAllocAsync`` /
``cuMemFreeAsync``; HIP: ``hipMallocAsync`` / ``hipFreeAsync``) allocates from its driver's pool;
elsewhere the device's ``DevicePool`` (``_core.mempool``) keeps blocks freed in queue order for the
next allocation of their size (a pooled block stays in the map, retired, so every check refuses
it until it is handed out again), and a miss is an ``olMemAlloc``.

A free retires the range at once (every check refuses it from then on) and waits for the copies
that checked it before (the grace period of ``olMemFree``, which never waits for a queue). Then the
queue keeps the block for its own next allocation of that size (``DevicePool.keep``: stream order
makes that safe, with no driver call), up to a bound; past it, and for the blocks a destroyed
queue kept, the free is enqueued and (with the driver's pool) the range leaves the map. Enqueuing the free and dropping the range happen under
one lock that an allocation's driver call and insertion also take, since the driver's pool may
hand the same address to the next allocation on the queue before the free has run.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from .._values import info as _info
from .._core import ranges as _ranges
from .._core.allocations import Allocation
from .common import fail, size_arg, wait_for_queue
from .contexts import context_owns
from .memory import allocate, fill_device, publish_fill_verdict
from .._values.enums import AllocType, ErrorCode
from .._core.handles import Queue
from .._core.session import LOCAL, Session

_ALLOC_TYPES = frozenset(AllocType)
_order = threading.Lock()  # a free's enqueue + its range leaving the map, against an allocation + its insertion


def olMemAllocAsync(ctx: Session, queue: Queue, alloc_type: Any, size_value: Any) -> int:
    if alloc_type is not AllocType.DEVICE:  # (the common case needs no lookup)
        alloc_type = _info.lookup(_ALLOC_TYPES, AllocType, alloc_type, "olMemAllocAsync type", ctx.api_level)
    if alloc_type is not AllocType.DEVICE:
        raise fail(ErrorCode.UNSUPPORTED,
                   f"olMemAllocAsync allocates DEVICE memory only ({alloc_type.name} has no stream-ordered allocator: use olMemAlloc)")  # fmt: skip
    size = size_arg(size_value, "Size")
    device, owner = queue.device, queue.context
    backend = device.backend
    pool = device.pool
    address = pool.reuse(queue.id, size)  # a block freed on this queue: no driver call
    if address is not None:
        return _revive(ctx, queue, address, size, None)
    if "mem_alloc_async" not in backend.implemented:
        address = pool.take(size)
        if address is None:
            return allocate(ctx, device, AllocType.DEVICE, size, owner, 0)
        return _revive(ctx, queue, address, size, pool.put)
    with _order:
        address = int(backend.mem_alloc_async(device.native, queue.native, AllocType.DEVICE, size))
        if not address:
            raise fail(ErrorCode.OUT_OF_RESOURCES, f"{device.platform.name} could not allocate {size} bytes")
        inserted = False
        try:
            inserted = _insert(ctx, queue, address, size)
        finally:
            if not inserted:
                backend.mem_free_async(device.native, queue.native, address)
        if not inserted:
            raise fail(ErrorCode.BACKEND_FAILURE, f"the driver's block {address:#x} overlaps memory offload knows")
    return address


def _revive(ctx: Session, queue: Queue, address: int, size: int, put_back: Callable[[int, int], None] | None) -> int:
    """Hand a pooled block out again: its retired range made live, in the queue's context, in one
    publish (``put_back(address, size)`` where that fails)."""
    snapshot = None
    context, device = queue.context, queue.device
    try:
        allocation = Allocation(device, AllocType.DEVICE, address, address + size, context)
        if context.default:  # never destroyed: nothing to lock (context_owns)
            snapshot = ctx.allocations.revive(allocation)
        else:
            with context_owns(context):
                snapshot = ctx.allocations.revive(allocation)
    finally:
        if snapshot is None:  # back where it came from: the queue's own blocks (None), or the device's pool
            put_back(address, size) if put_back is not None else queue.device.pool.keep(queue.id, address, size)
    if snapshot is None:
        raise fail(ErrorCode.BACKEND_FAILURE, f"the pooled block {address:#x} is no longer in the allocation map")
    # what check_range would find for a write to it, in the snapshot that made it live (a later
    # publish, a free included, makes this verdict dead): the use that follows needs no lookup,
    # and its first fill on this queue is replayed as olMemFill's later ones are
    if _ranges.remember_write(snapshot, allocation):
        publish_fill_verdict(snapshot, queue, allocation, fill_device(queue, allocation))
    return address


def _insert(ctx: Session, queue: Queue, address: int, size: int) -> bool:
    """Enter the allocation in the map, owned by the queue's context (INVALID_CONTEXT once destroyed)."""
    with context_owns(queue.context):
        return ctx.allocations.insert(Allocation(queue.device, AllocType.DEVICE, address, address + size, queue.context))


def olMemFreeAsync(ctx: Session, queue: Queue, address: Any) -> None:
    """Free a DEVICE allocation of the queue's device in the queue's order (any olMemAlloc or
    olMemAllocAsync one: INVALID_ARGUMENT for another address, INVALID_DEVICE for another device's)."""
    found = ctx.allocations.at(address) if type(address) is int else None
    if found is None or found.retired:
        raise fail(ErrorCode.INVALID_ARGUMENT, "address is not a known allocation")
    if found.alloc_type is not AllocType.DEVICE:
        raise fail(ErrorCode.INVALID_ARGUMENT,
                   f"olMemFreeAsync frees DEVICE memory; {address:#x} is {getattr(found.alloc_type, 'name', None)} memory (use olMemFree)")  # fmt: skip
    device = queue.device
    if found.device is not device:
        raise fail(ErrorCode.INVALID_DEVICE,
                   f"{address:#x} is memory of {found.device._describe()}, the queue's device is {device._describe()}")  # fmt: skip
    allocation = ctx.allocations.retire(address)
    if allocation is None:  # lost a race with another free
        raise fail(ErrorCode.INVALID_ARGUMENT, "address is not a known allocation")
    _ranges.wait_for_grace(ctx.grace())  # copies that checked it before have enqueued their work
    if device.pool.keep(queue.id, allocation.start, allocation.end - allocation.start):
        return  # kept (retired) for this queue's next allocation of its size
    _give_back(ctx, queue, allocation)


def _give_back(ctx: Session, queue: Queue, allocation: Allocation) -> None:
    """Free a retired block in the queue's order: the driver's ``mem_free_async`` (the range then
    leaves the map), or into the device's pool once the queue reaches it (it stays retired)."""
    device = queue.device
    backend = device.backend
    if "mem_free_async" in backend.implemented:
        with _order:
            try:
                backend.mem_free_async(device.native, queue.native, allocation.start)
            finally:
                ctx.allocations.discard([allocation])
        return
    # the core's pool: the block stays in the map, retired (refused), until handed out again
    give_back = functools.partial(device.pool.put, allocation.start, allocation.end - allocation.start)
    if LOCAL.queue is queue.native:  # from a host function of this queue: its earlier work is done
        give_back()
    elif "enqueue_host_call" in backend.implemented:
        backend.enqueue_host_call(device.native, queue.native, give_back)
    else:
        wait_for_queue(ctx, device, queue.native)
        give_back()


def release_kept(ctx: Session, queue: Queue) -> None:
    """Give back the blocks ``queue`` kept (it is being destroyed), in its order."""
    device = queue.device
    for address, size in device.pool.forget_queue(queue.id):
        _give_back(ctx, queue, Allocation(device, AllocType.DEVICE, address, address + size, queue.context, True))
