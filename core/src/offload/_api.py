"""The ``_impl`` layer of every ol* function (liboffload's ``<fn>_impl``).

Each function takes the live ``Context`` first and the Python arguments after it. By the time it
runs, the generated entry point (``_entrypoints``) has checked initialisation, run the validation
conditions of ``_api_table`` and checked that every handle argument is live and of its kind. What
is left here is the semantics: enum ranges, kind and ownership rules, routing to the backend.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from . import _info
from ._allocations import Allocation
from ._enums import (
    AllocType,
    DeviceInfo,
    ErrorCode,
    EventInfo,
    MemInfo,
    MemoryRegisterFlag,
    PlatformInfo,
    QueueInfo,
    SymbolInfo,
    SymbolKind,
)
from ._errors import OffloadError
from ._handles import Device, Event, Platform, Program, Queue, Symbol
from ._runtime import PARKED_IDLE_LIMIT, Context, device_info_value
from ._types import KernelLaunchSizeArgs

MAX_ALLOC_TRIES = 50
OL_VERSION = "v0.0.1"
PLATFORM_VENDOR = "Unknown platform vendor"

_memmove = ctypes.memmove
_ALLOC_TYPES = frozenset(AllocType)
_SYMBOL_KINDS = frozenset(SymbolKind)


def _fail(code: ErrorCode, details: str) -> OffloadError:
    return OffloadError(code, details)


def _address(value: Any, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    raise _fail(ErrorCode.INVALID_ARGUMENT, f"{name} must be a non-negative int address, got {value!r}")


def _size(value: Any, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    raise _fail(ErrorCode.INVALID_SIZE, f"{name} must be a non-negative int, got {value!r}")


def _bytes(value: Any, name: str) -> bytes:
    """A private copy of a bytes-like argument."""
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"{name} must be bytes-like, got {type(value).__name__}") from None


# --- platforms and devices -------------------------------------------------------------------


def olIterateDevices(ctx: Context, callback: Callable[[Device, Any], bool], user_data: Any) -> None:
    for device in list(ctx.devices):
        if not callback(device, user_data):
            return


def _platform_info(ctx: Context, platform: Platform, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.PLATFORM_INFO, PlatformInfo, prop, "getPlatformInfo")
    kind = _info.PLATFORM_INFO[prop][0]
    if prop is PlatformInfo.NAME:
        return platform.name, kind
    if prop is PlatformInfo.VENDOR_NAME:
        return PLATFORM_VENDOR, kind
    if prop is PlatformInfo.VERSION:
        return OL_VERSION, kind
    return platform.kind, kind




def _device_info(ctx: Context, device: Device, prop: Any) -> tuple[Any, _info.Kind]:
    try:
        answer = device.info_cache.get(prop)
    except TypeError:  # unhashable: lookup below reports it as an invalid enumeration
        answer = None
    if answer is None:
        prop = _info.lookup(_info.DEVICE_INFO, DeviceInfo, prop, "getDeviceInfo")
        kind, enum_type = _info.DEVICE_INFO[prop]
        value = _info.convert(kind, enum_type, device_info_value(device, prop), "OL_DEVICE_INFO_" + prop.name)
        answer = device.info_cache[prop] = (value, kind)
    return answer




# --- memory ----------------------------------------------------------------------------------


def olMemAlloc(ctx: Context, device: Device, alloc_type: Any, size: Any) -> int:
    alloc_type = _info.lookup(_ALLOC_TYPES, AllocType, alloc_type, "olMemAlloc type")
    size = _size(size, "Size")
    backend, native = device.backend, device.native
    rejected: list[int] = []
    try:
        for _ in range(MAX_ALLOC_TRIES):
            address = backend.mem_alloc(native, alloc_type, size)
            if not address:
                raise _fail(ErrorCode.OUT_OF_RESOURCES, f"{device.platform.name} could not allocate {size} bytes")
            if ctx.allocations.insert(Allocation(device, alloc_type, address, address + size)):
                return address
            rejected.append(address)  # overlaps another device's allocation: keep it out of reach
        raise _fail(ErrorCode.BACKEND_FAILURE, "failed to allocate non-overlapping memory")
    finally:
        for address in rejected:
            backend.mem_free(native, address, alloc_type)


def olMemFree(ctx: Context, address: Any) -> None:
    allocation = ctx.allocations.pop(address) if type(address) is int else None
    if allocation is None:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"address is not a known allocation ({address!r})")
    device = allocation.device
    device.backend.mem_free(device.native, address, allocation.alloc_type)


def _mem_info(ctx: Context, ptr: Any, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.MEM_INFO, MemInfo, prop, "olGetMemInfo")
    allocation = ctx.allocations.find(ptr) if type(ptr) is int else None
    if allocation is None:
        raise _fail(ErrorCode.NOT_FOUND, f"allocated memory information not found for {ptr!r}")
    kind = _info.MEM_INFO[prop][0]
    if prop is MemInfo.DEVICE:
        return allocation.device, kind
    if prop is MemInfo.BASE:
        return allocation.start, kind
    if prop is MemInfo.SIZE:
        return allocation.end - allocation.start, kind
    return allocation.alloc_type, kind




def _register_flags(flags: Any) -> MemoryRegisterFlag:
    if not isinstance(flags, int) or flags & ~0b11:
        raise _fail(ErrorCode.INVALID_ENUMERATION, f"memory register flags '{flags}' are invalid")
    return MemoryRegisterFlag(flags)


def olMemRegister(ctx: Context, device: Device, ptr: Any, size: Any, flags: Any) -> int:
    flags = _register_flags(flags)
    ptr, size = _address(ptr, "Ptr"), _size(size, "Size")
    return int(device.backend.mem_register(device.native, ptr, size, bool(flags & MemoryRegisterFlag.LOCK_MEMORY)))


def olMemUnregister(ctx: Context, device: Device, ptr: Any, flags: Any) -> None:
    flags = _register_flags(flags)
    device.backend.mem_unregister(
        device.native, _address(ptr, "Ptr"), bool(flags & MemoryRegisterFlag.UNLOCK_MEMORY)
    )


def olMemcpy(
    ctx: Context, queue: Queue | None, dst: Any, dst_device: Device, src: Any, src_device: Device, size: Any
) -> None:
    dst, src, size = _address(dst, "DstPtr"), _address(src, "SrcPtr"), _size(size, "Size")
    if dst_device.is_host and src_device.is_host:
        if queue is None:
            _memmove(dst, src, size)
        else:
            qdev = queue.device
            qdev.backend.enqueue_host_call(qdev.native, queue.native, functools.partial(_memmove, dst, src, size))
        return
    if src_device.is_host:
        owner, route = dst_device, "data_submit"
    elif dst_device.is_host:
        owner, route = src_device, "data_retrieve"
    else:
        _memcpy_device_to_device(queue, dst, dst_device, src, src_device, size)
        return
    qnative = _queue_for(queue, owner)
    getattr(owner.backend, route)(owner.native, dst, src, size, qnative)


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
) -> None:
    backend = src_device.backend
    if backend is dst_device.backend and "data_exchange" in backend.implemented:
        backend.data_exchange(src_device.native, src, dst_device.native, dst, size, _queue_for(queue, src_device))
        return
    if queue is not None:  # bounce through the host, after the queue's earlier work
        queue.device.backend.synchronize(queue.device.native, queue.native, False)
    bounce = (ctypes.c_char * size)()
    address = ctypes.addressof(bounce)
    src_device.backend.data_retrieve(src_device.native, address, src, size, None)
    dst_device.backend.data_submit(dst_device.native, dst, address, size, None)


def olMemFill(ctx: Context, queue: Queue | None, ptr: Any, pattern: Any, fill_size: Any) -> None:
    ptr, fill_size = _address(ptr, "Ptr"), _size(fill_size, "FillSize")
    pattern = _bytes(pattern, "PatternPtr")
    if not pattern or fill_size % len(pattern):
        raise _fail(ErrorCode.INVALID_SIZE, f"FillSize {fill_size} is not a multiple of PatternSize {len(pattern)}")
    allocation = ctx.allocations.find(ptr)
    if allocation is not None and ptr + fill_size > allocation.end:
        raise _fail(
            ErrorCode.INVALID_SIZE,
            f"filling {fill_size} bytes at {ptr:#x} overruns its allocation [{allocation.start:#x}, {allocation.end:#x})",
        )
    if queue is not None:
        device = queue.device
        if allocation is not None and allocation.device is not device and not (allocation.device.is_host and device.is_host):
            raise _fail(ErrorCode.INVALID_DEVICE, "the destination pointer and queue belong to different devices")
        native_queue = queue.native
    elif allocation is not None:
        device, native_queue = allocation.device, None
    else:
        raise _fail(
            ErrorCode.INVALID_ARGUMENT,
            f"{ptr:#x} is not an olMemAlloc allocation, so a synchronous olMemFill cannot tell its device; pass a queue",
        )
    if fill_size:
        device.backend.data_fill(device.native, ptr, pattern, fill_size, native_queue)


# --- queues ----------------------------------------------------------------------------------


def olCreateQueue(ctx: Context, device: Device) -> Queue:
    backend, native = device.backend, device.native
    reused = None
    with device.lock:
        for i in range(len(device.parked) - 1, -1, -1):  # newest first: long runners drift to the front
            if not backend.has_pending_work(native, device.parked[i]):
                reused = device.parked.pop(i)
                break
    if reused is not None:
        try:
            backend.synchronize(native, reused, False)
        except BaseException:
            backend.synchronize(native, reused, True)
            raise
        native_queue = reused
    else:
        native_queue = backend.create_queue(native)
    queue: Queue = Queue._make(ctx, device=device, native=native_queue, id=next(ctx.queue_ids))
    with device.lock:
        device.queues.add(queue)
    if device.parked:
        _release_surplus_parked(device)
    return queue


def olDestroyQueue(ctx: Context, queue: Queue) -> None:
    device = queue.device
    backend, native = device.backend, device.native
    with device.lock:
        if queue._ctx is None:  # lost a race with another olDestroyQueue
            raise _fail(ErrorCode.INVALID_QUEUE, f"{queue!r} was destroyed")
        queue._ctx = None
        device.queues.discard(queue)
    if not backend.has_pending_work(native, queue.native):
        backend.synchronize(native, queue.native, True)
        return
    with device.lock:
        device.parked.append(queue.native)
    _release_surplus_parked(device)


def _release_surplus_parked(device: Device) -> None:
    """Release the oldest finished parked queues beyond PARKED_IDLE_LIMIT (kept for reuse)."""
    backend, native = device.backend, device.native
    with device.lock:
        idle = [q for q in device.parked if not backend.has_pending_work(native, q)]
        surplus = idle[: max(0, len(idle) - PARKED_IDLE_LIMIT)]
        for q in surplus:
            device.parked.remove(q)
    for q in surplus:
        backend.synchronize(native, q, True)


def olSyncQueue(ctx: Context, queue: Queue) -> None:
    device = queue.device
    device.backend.synchronize(device.native, queue.native, False)


def olQueryQueue(ctx: Context, queue: Queue) -> bool:
    device = queue.device
    return not device.backend.has_pending_work(device.native, queue.native)


def olWaitEvents(ctx: Context, queue: Queue, events: Sequence[Event]) -> None:
    try:
        events = list(events)
    except TypeError:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Events must be a sequence of Event, got {events!r}") from None
    for event in events:  # check every event before enqueuing anything
        if event is None:
            raise _fail(ErrorCode.INVALID_NULL_HANDLE, "olWaitEvents asked to wait on a NULL event")
        if event.__class__ is not Event or event._ctx is not ctx:
            raise _fail(ErrorCode.INVALID_EVENT, f"{event!r} is not a live event")
    device = queue.device
    for event in events:
        if event.queue_id == queue.id:
            continue  # in-order queue: already waited for
        if event.device.backend is device.backend:
            device.backend.wait_event(device.native, queue.native, event.native)
        else:
            other = event.device
            device.backend.enqueue_host_call(
                device.native, queue.native, functools.partial(other.backend.sync_event, other.native, event.native)
            )


def _queue_info(ctx: Context, queue: Queue, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.QUEUE_INFO, QueueInfo, prop, "olGetQueueInfo")
    kind = _info.QUEUE_INFO[prop][0]
    if prop is QueueInfo.DEVICE:
        return queue.device, kind
    device = queue.device
    return not device.backend.has_pending_work(device.native, queue.native), kind




def olLaunchHostFunction(ctx: Context, queue: Queue, callback: Callable[[Any], None], user_data: Any) -> None:
    if not callable(callback):
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Callback must be callable, got {callback!r}")
    device = queue.device
    device.backend.enqueue_host_call(device.native, queue.native, functools.partial(callback, user_data))


# --- events ----------------------------------------------------------------------------------


def olCreateEvent(ctx: Context, queue: Queue) -> Event:
    device = queue.device
    native = device.backend.create_event(device.native, queue.native)
    event: Event = Event._make(ctx, device=device, native=native, queue=queue, queue_id=queue.id)
    return event


def olDestroyEvent(ctx: Context, event: Event) -> None:
    device = event.device
    with device.lock:
        if event._ctx is None:
            raise _fail(ErrorCode.INVALID_EVENT, f"{event!r} was destroyed")
        event._ctx = None
    if "destroy_event" in device.backend.implemented:
        device.backend.destroy_event(device.native, event.native)


def olSyncEvent(ctx: Context, event: Event) -> None:
    device = event.device
    device.backend.sync_event(device.native, event.native)


def _event_info(ctx: Context, event: Event, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.EVENT_INFO, EventInfo, prop, "olGetEventInfo")
    kind = _info.EVENT_INFO[prop][0]
    if prop is EventInfo.QUEUE:
        return event.queue, kind
    device = event.device
    return bool(device.backend.is_event_complete(device.native, event.native)), kind




def olGetEventElapsedTime(ctx: Context, start: Event, end: Event) -> float:
    if start.device is not end.device:
        raise _fail(ErrorCode.INVALID_DEVICE, "StartEvent and EndEvent must belong to the same device")
    device = start.device
    return float(device.backend.event_elapsed_time(device.native, start.native, end.native))


# --- programs and symbols --------------------------------------------------------------------


def olCreateProgram(ctx: Context, device: Device, data: Any) -> Program:
    data = _bytes(data, "ProgData")
    if not data:
        raise _fail(ErrorCode.INVALID_BINARY, "the binary is empty (ProgDataSize == 0)")
    image = device.backend.load_binary(device.native, data)
    program: Program = Program._make(ctx, device=device, image=image, data=data, symbols={}, lock=threading.Lock())
    with device.lock:
        device.programs.add(program)
    return program


def olIsValidBinary(ctx: Context, device: Device, data: Any) -> bool:
    data = _bytes(data, "ProgData")
    if not data or "is_valid_binary" not in device.backend.implemented:
        return False
    return bool(device.backend.is_valid_binary(device.native, data))


def olDestroyProgram(ctx: Context, program: Program) -> None:
    device = program.device
    with device.lock:
        if program._ctx is None:
            raise _fail(ErrorCode.INVALID_ARGUMENT, f"{program!r} was destroyed")
        program._ctx = None
        device.programs.discard(program)
    with program.lock:
        for symbol in program.symbols.values():
            symbol._ctx = None
    device.backend.unload_binary(device.native, program.image)


def olGetSymbol(ctx: Context, program: Program, name: Any, kind: Any) -> Symbol:
    kind = _info.lookup(_SYMBOL_KINDS, SymbolKind, kind, "getSymbol kind")
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode()
    if type(name) is not str or not name or "\0" in name:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Name must be a non-empty str, got {name!r}")
    key = (kind, name)
    device = program.device
    with program.lock:
        symbol = program.symbols.get(key)
        if symbol is not None:
            return symbol
        if kind is SymbolKind.KERNEL:
            native, address, size = device.backend.get_kernel(device.native, program.image, name), 0, 0
        else:
            native = None
            address, size = device.backend.get_global(device.native, program.image, name)
        symbol = Symbol._make(ctx, program=program, kind=kind, name=name, native=native, address=address, size=size)
        program.symbols[key] = symbol
        return symbol


def _symbol_info(ctx: Context, symbol: Symbol, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.SYMBOL_INFO, SymbolInfo, prop, "olGetSymbolInfo")
    kind = _info.SYMBOL_INFO[prop][0]
    if prop is SymbolInfo.KIND:
        return symbol.kind, kind
    if symbol.kind is not SymbolKind.GLOBAL_VARIABLE:
        raise _fail(
            ErrorCode.SYMBOL_KIND,
            f"OL_SYMBOL_INFO_{prop.name}: Expected a symbol of Kind OL_SYMBOL_KIND_GLOBAL_VARIABLE "
            f"but given a symbol of Kind OL_SYMBOL_KIND_{symbol.kind.name}",
        )
    return (symbol.address if prop is SymbolInfo.GLOBAL_VARIABLE_ADDRESS else symbol.size), kind




# --- kernels ---------------------------------------------------------------------------------


def olLaunchKernel(
    ctx: Context, queue: Queue | None, device: Device, kernel: Symbol, args: Any, launch: KernelLaunchSizeArgs
) -> None:
    if queue is not None and queue.device is not device:
        raise _fail(ErrorCode.INVALID_DEVICE, "device specified does not match the device of the given queue")
    if kernel.kind is not SymbolKind.KERNEL:
        raise _fail(ErrorCode.SYMBOL_KIND, "provided symbol is not a kernel")
    if kernel.program.device is not device:
        raise _fail(ErrorCode.INVALID_DEVICE, "the kernel's program was created on another device")
    if launch.__class__ is not KernelLaunchSizeArgs:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"LaunchSizeArgs must be KernelLaunchSizeArgs, got {launch!r}")
    if launch.zero_extent is not None:
        raise _fail(ErrorCode.INVALID_SIZE, f"launch size {launch.zero_extent} is 0")
    if args is not None and args.__class__ is not bytes:
        try:
            memoryview(args)
        except TypeError:
            raise _fail(ErrorCode.INVALID_ARGUMENT, f"ArgumentsData must be bytes-like or None, got {type(args).__name__}") from None
    device.backend.launch_kernel(device.native, None if queue is None else queue.native, kernel.native, args, launch)


def olCalculateOptimalOccupancy(ctx: Context, device: Device, kernel: Symbol, shared_memory: Any) -> int:
    if kernel.kind is not SymbolKind.KERNEL:
        raise _fail(ErrorCode.SYMBOL_KIND, "provided symbol is not a kernel")
    return int(device.backend.max_group_size(device.native, kernel.native, _size(shared_memory, "SharedMemory")))


# --- info queries: each olGet<X>Info / olGet<X>InfoSize pair comes from one query -----------

InfoQuery = Callable[[Context, Any, Any], tuple[Any, _info.Kind]]

INFO_QUERIES: dict[str, InfoQuery] = {
    "Platform": _platform_info,
    "Device": _device_info,
    "Mem": _mem_info,
    "Queue": _queue_info,
    "Event": _event_info,
    "Symbol": _symbol_info,
}


def info_value(query: InfoQuery) -> Callable[[Context, Any, Any], Any]:
    """``olGet<X>Info``: the property's value."""

    def value(ctx: Context, handle: Any, prop: Any) -> Any:
        return query(ctx, handle, prop)[0]

    return value


def info_size(query: InfoQuery) -> Callable[[Context, Any, Any], int]:
    """``olGet<X>InfoSize``: the property's C size in bytes."""

    def size(ctx: Context, handle: Any, prop: Any) -> int:
        value, kind = query(ctx, handle, prop)
        return _info.c_size(kind, value)

    return size
