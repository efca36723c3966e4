"""The ``_impl`` layer of every ol* function (liboffload's ``<fn>_impl``).

Each function takes the live ``Context`` first and the Python arguments after it. By the time it
runs, the generated entry point (``_entrypoints``) has checked initialisation, run the validation
conditions of ``_api_table`` and checked that every handle argument is live and of its kind. What
is left here is the semantics: enum ranges, kind and ownership rules, routing to the backend.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import threading
import time
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
from ._errors import OffloadError, as_offload_error
from ._handles import Device, Event, Platform, Program, Queue, Symbol
from ._runtime import LOCAL, PARKED_IDLE_LIMIT, STATE, Context, device_info_value
from ._memory import ADDRESS_LIMIT, DEVICE, HOST_MAPPINGS, READ, WRITE, HOT as _HOT, as_address, as_size, check_range, end_of
from ._types import KernelLaunchSizeArgs, KernelParam

MAX_ALLOC_TRIES = 50
OL_VERSION = "v0.0.1"
PLATFORM_VENDOR = "Unknown platform vendor"

_memmove = ctypes.memmove
_ALLOC_TYPES = frozenset(AllocType)
_SYMBOL_KINDS = frozenset(SymbolKind)
_KERNEL = SymbolKind.KERNEL  # a module global: reading an enum member off its class costs ~60 ns
# From this size a synchronous host-to-host copy goes to the host device's data_submit (whose
# backend may split it over its threads: the host backend's pool copies 64 MiB in half the time
# of one memmove on 2 cores); smaller ones are one memmove here.
_BIG_HOST_COPY = 4 << 20


ctx_lock = threading.Lock()  # guards Context.orphan_errors


def _fail(code: ErrorCode, details: str) -> OffloadError:
    return OffloadError(code, details)


def _address(value: Any, name: str) -> int:
    if type(value) is int and 0 <= value < ADDRESS_LIMIT:
        return value
    return as_address(value, name)


def _size(value: Any, name: str) -> int:
    if type(value) is int and 0 <= value < ADDRESS_LIMIT:
        return value
    return as_size(value, name)


def _bytes(value: Any, name: str) -> bytes:
    """A private copy of a bytes-like argument."""
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"{name} must be bytes-like, got {type(value).__name__}") from None


# --- platforms and devices -------------------------------------------------------------------


def olIterateDevices(ctx: Context, callback: Callable[[Device, Any], bool], user_data: Any) -> None:
    """Call ``callback`` per device; it may call any function, the final ``olShutDown`` included."""
    if not callable(callback):
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Callback must be callable, got {callback!r}")
    LOCAL.iterating += 1
    try:
        for device in list(ctx.devices):
            if not callback(device, user_data):
                return
    finally:
        LOCAL.iterating -= 1


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
    # the cache is keyed by DeviceInfo (equal to its int): another enum class (PlatformInfo.NAME)
    # must not hit it, but go to lookup, which refuses it
    answer = device.info_cache.get(prop) if type(prop) is DeviceInfo or type(prop) is int else None
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
            try:
                address = backend.mem_alloc(native, alloc_type, size)
            except MemoryError as exc:
                raise _fail(
                    ErrorCode.OUT_OF_RESOURCES,
                    f"{device.platform.name}:{device.index} could not allocate {size} bytes ({size:#x}) of "
                    f"{alloc_type.name} memory: {exc or 'out of memory'}",
                ) from exc
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
    """Free an allocation once no queued work can still use it: every busy queue (live or
    parked, of every device) is waited for first, as the CUDA driver's implicit synchronisation
    does. Called from a host function, the free is queued behind its own queue's work instead."""
    allocation = ctx.allocations.pop(address) if type(address) is int else None
    if allocation is None:
        shown = f"{address:#x}" if type(address) is int else repr(address)
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"address is not a known allocation ({shown})")
    device = allocation.device
    if "mem_free" not in device.backend.implemented:  # keep it: the allocation stays live
        ctx.allocations.insert(allocation)
        device.backend.mem_free(device.native, address, allocation.alloc_type)  # raises UNSUPPORTED
    release = functools.partial(device.backend.mem_free, device.native, address, allocation.alloc_type)
    _release_after_queued_work(ctx, ctx.devices, release)
    HOST_MAPPINGS.forget()


def _release_after_queued_work(ctx: Context, devices: Sequence[Device], release: Callable[[], None]) -> None:
    """Wait for every busy queue of ``devices``, then call ``release``; inside a host function,
    ``release`` is enqueued on its own queue instead (which cannot be waited for from inside)."""
    own = LOCAL.queue
    for device in devices:
        live, parked = tuple(device.queues), tuple(device.parked)  # copied atomically (GIL)
        if not live and not parked:
            continue
        backend, native = device.backend, device.native
        has_pending_work = backend.has_pending_work
        for native_queue in (*(q.native for q in live), *parked):
            if native_queue is not own and has_pending_work(native, native_queue):
                _wait_for_queue(ctx, device, native_queue)
    if own is None:
        release()
    else:
        own_device = LOCAL.device
        own_device.backend.enqueue_host_call(own_device.native, own, release)


def _wait_for_queue(ctx: Context, device: Device, native_queue: Any) -> None:
    """Wait until a queue has no pending work. Polls ``has_pending_work`` (with a growing sleep):
    nothing is enqueued on a queue this caller does not own, and its errors stay its owner's."""
    backend, native = device.backend, device.native
    delay = 0.00005
    while backend.has_pending_work(native, native_queue):
        time.sleep(delay)
        delay = min(delay * 2, 0.005)


def _mem_info(ctx: Context, ptr: Any, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.MEM_INFO, MemInfo, prop, "olGetMemInfo")
    allocation = ctx.allocations.find(ptr) if type(ptr) is int else None
    if allocation is None:
        shown = f"{ptr:#x}" if type(ptr) is int else repr(ptr)
        raise _fail(ErrorCode.NOT_FOUND, f"allocated memory information not found for {shown}")
    kind = _info.MEM_INFO[prop][0]
    if prop is MemInfo.DEVICE:
        return allocation.device, kind
    if prop is MemInfo.BASE:
        return allocation.start, kind
    if prop is MemInfo.SIZE:
        return allocation.end - allocation.start, kind
    return allocation.alloc_type, kind




def _register_flags(flags: Any) -> MemoryRegisterFlag:
    if not isinstance(flags, int) and hasattr(type(flags), "__index__"):
        flags = operator.index(flags)
    if not isinstance(flags, int) or flags & ~0b11:
        raise _fail(ErrorCode.INVALID_ENUMERATION, f"memory register flags '{flags}' are invalid")
    return MemoryRegisterFlag(flags)


def olMemRegister(ctx: Context, device: Device, ptr: Any, size: Any, flags: Any) -> int:
    """Register host memory with ``device``. The core counts users per range: registering inside
    a registered range adds a user (the backend is not called again); a partial overlap is
    ``INVALID_ARGUMENT``."""
    flags = _register_flags(flags)
    ptr, size = _address(ptr, "Ptr"), _size(size, "Size")
    end = end_of(ptr, size, "Ptr")
    lock = bool(flags & MemoryRegisterFlag.LOCK_MEMORY)
    with device.lock:
        for base, entry in device.registered.items():
            if base <= ptr and end <= base + entry[0]:
                entry[1] += 1
                return ptr
            if base < end and ptr < base + entry[0]:
                raise _fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"[{ptr:#x}, {end:#x}) partially overlaps the registered range [{base:#x}, {base + entry[0]:#x})",
                )
        pinned = int(device.backend.mem_register(device.native, ptr, size, lock))
        device.registered[ptr] = [size, 1, lock]
    return pinned


def olMemUnregister(ctx: Context, device: Device, ptr: Any, flags: Any) -> None:
    """Drop one user of the registered range holding ``ptr``; the last one unregisters it."""
    flags = _register_flags(flags)
    ptr = _address(ptr, "Ptr")
    backend = device.backend
    if "mem_unregister" not in backend.implemented:
        backend.mem_unregister(device.native, ptr, 0, False)  # raises UNSUPPORTED
    with device.lock:
        for base, entry in device.registered.items():
            if base <= ptr < base + entry[0]:
                break
        else:
            raise _fail(ErrorCode.INVALID_ARGUMENT, f"{ptr:#x} is not registered memory")
        entry[1] -= 1
        if entry[1]:
            return
        del device.registered[base]
        unlock = entry[2] and bool(flags & MemoryRegisterFlag.UNLOCK_MEMORY)
        backend.mem_unregister(device.native, base, entry[0], unlock)


def _range_values(dst: int, src: int, size: int) -> None:
    """Raise the error for a copy whose addresses or size are out of range or whose ends wrap."""
    _address(dst, "DstPtr")
    _address(src, "SrcPtr")
    _size(size, "Size")
    end_of(dst, size, "DstPtr")
    end_of(src, size, "SrcPtr")


def olMemcpy(
    ctx: Context, queue: Queue | None, dst: Any, dst_device: Device, src: Any, src_device: Device, size: Any
) -> None:
    """Copy ``size`` bytes. Both ranges are checked first (``_memory``); with a queue the copy runs
    in queue order, and the memory it uses is kept alive until it has run (``olMemFree`` waits).
    A zero-byte copy does nothing."""
    if 0 < size < _BIG_HOST_COPY and queue is None and dst_device.is_host and src_device.is_host:
        # the hot path: both ranges inside the host segments last found safe (see _memory.HOT)
        hot_dst, hot_src = _HOT[WRITE], _HOT[READ]
        snapshot = ctx.allocations.snapshot
        try:
            if (
                hot_dst[2] is snapshot
                and hot_src[2] is snapshot
                and hot_dst[0] <= dst
                and dst + size <= hot_dst[1]
                and hot_src[0] <= src
                and src + size <= hot_src[1]
            ):
                _memmove(dst, src, size)
                return
        except TypeError:  # a NULL (None) pointer with validation off: checked below
            pass
    if dst.__class__ is not int or src.__class__ is not int:
        dst, src = _address(dst, "DstPtr"), _address(src, "SrcPtr")
    bits = dst | src | size
    dst_end, src_end = dst + size, src + size
    if bits < 0 or bits >= ADDRESS_LIMIT or dst_end > ADDRESS_LIMIT or src_end > ADDRESS_LIMIT:
        _range_values(dst, src, size)
    if not size:
        return  # nothing to copy, nothing to order
    if not dst_device.is_host:  # (the common host-device pairs with their hook skip the call)
        if not (src_device.is_host and "data_submit" in dst_device.backend.implemented):
            _require_copy_hooks(dst_device, src_device)
    elif not src_device.is_host and "data_retrieve" not in src_device.backend.implemented:
        _require_copy_hooks(dst_device, src_device)
    # a range inside the host segment (or device allocation) last found safe needs no lookup
    snapshot = ctx.allocations.snapshot
    hot = _HOT[WRITE] if dst_device.is_host else _HOT[DEVICE]
    if not (hot[2] is snapshot and hot[0] <= dst and dst_end <= hot[1] and (hot[3] is None or hot[3] is dst_device)):
        check_range(ctx, "DstPtr", dst, dst_end, dst_device, WRITE)
    hot = _HOT[READ] if src_device.is_host else _HOT[DEVICE]
    if not (hot[2] is snapshot and hot[0] <= src and src_end <= hot[1] and (hot[3] is None or hot[3] is src_device)):
        check_range(ctx, "SrcPtr", src, src_end, src_device, READ)
    if dst_device.is_host and src_device.is_host:
        if queue is None:
            if size >= _BIG_HOST_COPY and "data_submit" in dst_device.backend.implemented:
                dst_device.backend.data_submit(dst_device.native, dst, src, size, None)
            else:
                _memmove(dst, src, size)
        else:
            qdev = queue.device
            qdev.backend.enqueue_host_call(qdev.native, queue.native, functools.partial(_memmove, dst, src, size))
        return
    if src_device.is_host:
        owner = dst_device
    elif dst_device.is_host:
        owner = src_device
    else:
        _memcpy_device_to_device(queue, dst, dst_device, src, src_device, size)
        return
    backend = owner.backend
    if queue is None:
        qnative = None
    elif queue.device.backend is backend:
        qnative = queue.native
    else:
        qnative = _queue_for(queue, owner)
    if owner is dst_device:
        backend.data_submit(owner.native, dst, src, size, qnative)
    else:
        backend.data_retrieve(owner.native, dst, src, size, qnative)


def _require_copy_hooks(dst_device: Device, src_device: Device) -> None:
    """Answer UNSUPPORTED (naming the backend and hook) before any range check when a device of
    the copy has no hook to move its side of the data: no address of it could be valid anyway."""
    exchange = (
        not dst_device.is_host
        and not src_device.is_host
        and dst_device.backend is src_device.backend
        and "data_exchange" in dst_device.backend.implemented
    )
    if exchange:
        return
    if not dst_device.is_host and "data_submit" not in dst_device.backend.implemented:
        dst_device.backend.data_submit(dst_device.native, 0, 0, 0, None)  # raises UNSUPPORTED
    if not src_device.is_host and "data_retrieve" not in src_device.backend.implemented:
        src_device.backend.data_retrieve(src_device.native, 0, 0, 0, None)  # raises UNSUPPORTED


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
    """Fill ``fill_size`` bytes at ``ptr``; the range is checked first, as for ``olMemcpy``."""
    ptr, fill_size = _address(ptr, "Ptr"), _size(fill_size, "FillSize")
    end = end_of(ptr, fill_size, "Ptr")
    pattern = _bytes(pattern, "PatternPtr")
    if not pattern or fill_size % len(pattern):
        raise _fail(ErrorCode.INVALID_SIZE, f"FillSize {fill_size} is not a multiple of PatternSize {len(pattern)}")
    allocation = ctx.allocations.find(ptr)
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
        check_range(ctx, "Ptr", ptr, end, device if allocation is None else allocation.device, WRITE)
        device.backend.data_fill(device.native, ptr, pattern, fill_size, native_queue)


# --- queues ----------------------------------------------------------------------------------


def olCreateQueue(ctx: Context, device: Device) -> Queue:
    """A new queue, or a finished parked one reused; an asynchronous error that a parked queue
    still holds belongs to its destroyed owner, so it is kept for the final ``olShutDown``, never
    given to this caller (and that queue is released instead of reused)."""
    backend, native = device.backend, device.native
    native_queue = None
    while native_queue is None:
        reused = None
        with device.lock:
            for i in range(len(device.parked) - 1, -1, -1):  # newest first: long runners drift to the front
                if not backend.has_pending_work(native, device.parked[i]):
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
    queue: Queue = Queue._make(ctx, device=device, native=native_queue, id=next(ctx.queue_ids))
    with device.lock:
        device.queues.add(queue)
    if device.parked:
        _release_surplus_parked(ctx, device)
    return queue


def _orphan(ctx: Context, exc: BaseException, what: str) -> None:
    """Keep an error that no live caller owns (a destroyed queue's) for the final olShutDown."""
    error = as_offload_error(exc, what)
    with ctx_lock:
        ctx.orphan_errors.append(error)


def _release_native_queue(ctx: Context, device: Device, native_queue: Any) -> None:
    try:
        device.backend.synchronize(device.native, native_queue, True)
    except Exception as exc:
        _orphan(ctx, exc, f"{device.platform.name}: releasing a destroyed queue")


def olDestroyQueue(ctx: Context, queue: Queue) -> None:
    """Destroy a queue: its enqueued work still runs (the queue is parked until it has), and an
    error of that work reaches the final ``olShutDown``. A finished queue's errors are raised here."""
    device = queue.device
    backend, native = device.backend, device.native
    with device.lock:
        if queue._ctx is None:  # lost a race with another olDestroyQueue
            raise _fail(ErrorCode.INVALID_QUEUE, f"{queue!r} was destroyed")
        queue._ctx = None
        device.queues.discard(queue)
    if not backend.has_pending_work(native, queue.native) and LOCAL.queue is not queue.native:
        backend.synchronize(native, queue.native, True)
        return
    with device.lock:
        device.parked.append(queue.native)
    _release_surplus_parked(ctx, device)


def _release_surplus_parked(ctx: Context, device: Device) -> None:
    """Release the oldest finished parked queues beyond PARKED_IDLE_LIMIT (kept for reuse); every
    one is released whatever fails, and failures are kept for the final olShutDown."""
    backend, native = device.backend, device.native
    with device.lock:
        idle = [q for q in device.parked if q is not LOCAL.queue and not backend.has_pending_work(native, q)]
        surplus = idle[: max(0, len(idle) - PARKED_IDLE_LIMIT)]
        for q in surplus:
            device.parked.remove(q)
    for q in surplus:
        _release_native_queue(ctx, device, q)


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
    device.backend.enqueue_host_call(
        device.native, queue.native, functools.partial(_run_host_function, device, queue.native, callback, user_data)
    )


def _run_host_function(device: Device, native_queue: Any, callback: Callable[[Any], None], user_data: Any) -> None:
    """Run a host function, marking its thread as running ``native_queue``'s work (calls made from
    it then never wait for that queue, which could not finish before they return)."""
    local = LOCAL
    previous = local.queue, local.device
    local.queue, local.device = native_queue, device
    try:
        callback(user_data)
    finally:
        local.queue, local.device = previous


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
    program: Program = Program._make(
        ctx, device=device, image=image, data=data, symbols={}, lock=threading.Lock()
    )
    with device.lock:
        device.programs.add(program)
    return program


def olIsValidBinary(ctx: Context, device: Device, data: Any) -> bool:
    data = _bytes(data, "ProgData")
    if not data or "is_valid_binary" not in device.backend.implemented:
        return False
    return bool(device.backend.is_valid_binary(device.native, data))


def olDestroyProgram(ctx: Context, program: Program) -> None:
    """Unload a program once no work uses it: launches of its kernels running in other threads
    are waited for, then every busy queue of its device (the unload is queued behind the calling
    host function's own queue when called from one)."""
    device = program.device
    with device.lock:
        if program._ctx is None:
            raise _fail(ErrorCode.INVALID_ARGUMENT, f"{program!r} was destroyed")
        program._ctx = None
        device.programs.discard(program)
    with program.lock:
        for symbol in program.symbols.values():
            symbol._ctx = None
    ctx.globals.remove_owned_by(program)
    delay = 0.0002
    while _launching(ctx, program):  # launches registered before their kernels were marked dead
        time.sleep(delay)
        delay = min(delay * 2, 0.01)
    release = functools.partial(device.backend.unload_binary, device.native, program.image)
    _release_after_queued_work(ctx, [device], release)


def _launching(ctx: Context, program: Program) -> bool:
    """Whether an olLaunchKernel of one of ``program``'s kernels is running (each registers its
    kernel in ``ctx.calls`` while it runs)."""
    return any(call.__class__ is Symbol and call.program is program for call in list(ctx.calls))


def olGetSymbol(ctx: Context, program: Program, name: Any, kind: Any) -> Symbol:
    kind = _info.lookup(_SYMBOL_KINDS, SymbolKind, kind, "getSymbol kind")
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode()
    if type(name) is not str or not name or "\0" in name:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Name must be a non-empty str, got {name!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate names no symbol any image can hold
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Name {name!r} cannot be encoded as UTF-8: {exc.reason}") from None
    key = (kind, name)
    device = program.device
    with program.lock:
        symbol = program.symbols.get(key)
        if symbol is not None:
            return symbol
        params: tuple[KernelParam, ...] | None = None
        args_size = None
        if kind is SymbolKind.KERNEL:
            native, address, size = device.backend.get_kernel(device.native, program.image, name), 0, 0
            params = _kernel_params(device, native, name)
            if params is not None:
                args_size = max((p.offset + p.size for p in params), default=0)
        else:
            native = None
            address, size = device.backend.get_global(device.native, program.image, name)
            address, size = int(address), int(size)
            if not device.is_host and size > 0:
                ctx.globals.insert(Allocation(device, None, address, address + size, program))
        symbol = Symbol._make(
            ctx, program=program, kind=kind, name=name, native=native, address=address, size=size,
            params=params, args_size=args_size, launch_device=program.device if kind is SymbolKind.KERNEL else None,
        )
        program.symbols[key] = symbol
        return symbol


def _kernel_params(device: Device, kernel: Any, name: str) -> tuple[KernelParam, ...] | None:
    """The backend's ``kernel_params`` answer, checked (None: unknown, or no such hook)."""
    backend = device.backend
    if "kernel_params" not in backend.implemented:
        return None
    answer = backend.kernel_params(device.native, kernel)
    if answer is None:
        return None
    params = []
    for param in answer:
        param = param if isinstance(param, KernelParam) else KernelParam(*param)
        if type(param.offset) is not int or type(param.size) is not int or param.offset < 0 or param.size < 0:
            raise _fail(ErrorCode.BACKEND_FAILURE, f"kernel_params of {name!r} gave an invalid parameter {param!r}")
        params.append(param)
    return tuple(params)


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
    """Launch a kernel. The argument buffer must hold every parameter the backend reports
    (``kernel_params``); the grid must fit the device's limits. Its program is not unloaded while
    the launch is being made, and not before queued launches have run (``olDestroyProgram``)."""
    # one test for the common case (a kernel of this device, on its queue, a launch already found
    # within its limits); anything else is sorted out, in liboffload's order, by _check_launch
    if (
        kernel.launch_device is not device
        or (queue is not None and queue.device is not device)
        or launch.__class__ is not KernelLaunchSizeArgs
        or launch.checked_for is not device.limits
    ):
        _check_launch(queue, device, kernel, launch)
    if args is None:
        if kernel.params:
            raise _fail(
                ErrorCode.INVALID_ARGUMENT,
                f"kernel {kernel.name!r} takes {len(kernel.params)} parameter(s) ({kernel.args_size} bytes) "
                "but ArgumentsData is NULL",
            )
    else:
        if args.__class__ is bytes:
            size = len(args)
        else:
            try:
                view = memoryview(args)
            except TypeError:
                raise _fail(
                    ErrorCode.INVALID_ARGUMENT, f"ArgumentsData must be bytes-like or None, got {type(args).__name__}"
                ) from None
            if not view.c_contiguous:
                raise _fail(ErrorCode.INVALID_ARGUMENT, "ArgumentsData must be a contiguous buffer")
            size = view.nbytes
        needed = kernel.args_size
        if needed is not None and size < needed:
            raise _fail(
                ErrorCode.INVALID_ARGUMENT,
                f"ArgumentsSize {size} is shorter than the {needed} bytes of kernel {kernel.name!r}'s parameters",
            )
    # the entry point registered the kernel in ctx.calls before calling this: either
    # olDestroyProgram sees it there (and waits), or this sees the kernel destroyed
    if kernel._ctx is None:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"Kernel {kernel!r} was destroyed with its program")
    device.backend.launch_kernel(device.native, None if queue is None else queue.native, kernel.native, args, launch)


def _check_launch(queue: Queue | None, device: Device, kernel: Symbol, launch: Any) -> None:
    """Refuse a launch on another device's queue or kernel, of a global variable, or with a size
    that is not a KernelLaunchSizeArgs within the device's limits."""
    if queue is not None and queue.device is not device:
        raise _fail(ErrorCode.INVALID_DEVICE, "device specified does not match the device of the given queue")
    if kernel.kind is not _KERNEL:
        raise _fail(ErrorCode.SYMBOL_KIND, "provided symbol is not a kernel")
    if kernel.program.device is not device:
        raise _fail(ErrorCode.INVALID_DEVICE, "the kernel's program was created on another device")
    if launch.__class__ is not KernelLaunchSizeArgs:
        raise _fail(ErrorCode.INVALID_ARGUMENT, f"LaunchSizeArgs must be KernelLaunchSizeArgs, got {launch!r}")
    if launch.checked_for is not device.limits:
        _check_launch_size(launch, device)


def _check_launch_size(launch: KernelLaunchSizeArgs, device: Device) -> None:
    """Refuse a zero extent, a grid of 2**64 groups or more, or one beyond the device's limits
    (INVALID_SIZE); remember a launch found within them."""
    if launch.zero_extent is not None:
        raise _fail(ErrorCode.INVALID_SIZE, f"launch size {launch.zero_extent} is 0")
    if launch.total_groups >= ADDRESS_LIMIT:
        raise _fail(ErrorCode.INVALID_SIZE, f"the grid has {launch.total_groups} groups, more than 2**64 - 1")
    max_group, max_group_dims, max_work, max_work_dims = device.limits
    groups, items = launch.num_groups, launch.group_size
    if max_group is not None and launch.group_items > max_group:
        raise _fail(
            ErrorCode.INVALID_SIZE,
            f"a group of {launch.group_items} work-items exceeds MAX_WORK_GROUP_SIZE {max_group}",
        )
    for axis, extent, work, group_limit, work_limit in zip(
        "xyz", items, (g * i for g, i in zip(groups, items)), max_group_dims or (None,) * 3, max_work_dims or (None,) * 3
    ):
        if group_limit is not None and extent > group_limit:
            raise _fail(
                ErrorCode.INVALID_SIZE,
                f"GroupSize.{axis} = {extent} exceeds the device's MAX_WORK_GROUP_SIZE_PER_DIMENSION.{axis} = {group_limit}",
            )
        if work_limit is not None and work > work_limit:
            raise _fail(
                ErrorCode.INVALID_SIZE,
                f"NumGroups.{axis} * GroupSize.{axis} = {work} work-items exceed the device's "
                f"MAX_WORK_SIZE_PER_DIMENSION.{axis} = {work_limit}",
            )
    total = launch.total_groups * launch.group_items
    if max_work is not None and total > max_work:
        raise _fail(ErrorCode.INVALID_SIZE, f"the grid's {total} work-items exceed MAX_WORK_SIZE {max_work}")
    object.__setattr__(launch, "checked_for", device.limits)  # the one cache field: see KernelLaunchSizeArgs


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


# --- interpreter exit ------------------------------------------------------------------------


def finish_queued_work_at_exit() -> None:
    """At interpreter exit without the final ``olShutDown``, let every queue (live or parked)
    finish the work already enqueued on it; release nothing, since atexit handlers that run later
    may still use the library. What cannot be finished is named in a warning on stderr."""
    import sys

    ctx = STATE.ctx
    if ctx is None:
        return
    dropped: list[str] = []
    for device in list(ctx.devices):
        with device.lock:
            natives = [(f"queue #{q.id}", q.native) for q in device.queues]
            natives += [("a destroyed (parked) queue", q) for q in device.parked]
        for label, native_queue in natives:
            try:
                if device.backend.has_pending_work(device.native, native_queue):
                    _wait_for_queue(ctx, device, native_queue)
            except BaseException as exc:  # noqa: B036 - exit goes on; say what was lost
                dropped.append(f"{label} of {device._describe()}: {type(exc).__name__}: {exc}")
    if dropped:
        print(
            "offload: at exit without olShutDown, queued work was not finished on " + "; ".join(dropped),
            file=sys.stderr,
        )
