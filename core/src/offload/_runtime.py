"""The global runtime state: one ``Context`` made by the first ``olInit``, freed by the last
``olShutDown``, reference counted under one lock.

Readers never lock: ``STATE.ctx`` is either None or a fully built context (it is published only
after every backend is initialised, and cleared before teardown starts), so the per-call check is
one attribute read.
"""

from __future__ import annotations

import itertools
import os
import threading
from typing import Any

from ._allocations import AllocationMap
from ._enums import DeviceInfo, ErrorCode, PlatformBackend
from ._errors import OffloadError, as_offload_error, join_errors
from ._handles import Device, Platform
from ._registry import BackendStatus, BoundBackend, load_backends, release_backend

TRACE_ENV = "OFFLOAD_TRACE"
DISABLE_VALIDATION_ENV = "OFFLOAD_DISABLE_VALIDATION"
PARKED_IDLE_LIMIT = 8  # finished parked queues kept per device for reuse; more are released


class Context:
    """Everything one init..shutdown session owns."""

    __slots__ = ("trace", "validate", "tracer", "platforms", "devices", "statuses", "allocations", "queue_ids")

    trace: bool
    validate: bool
    tracer: Any  # a _tracing.Tracer when trace is True
    platforms: list[Platform]
    devices: list[Device]
    statuses: list[BackendStatus]
    allocations: AllocationMap
    queue_ids: itertools.count[int]

    def __init__(self) -> None:
        from . import _tracing

        self.tracer = _tracing.tracer_from_environment(os.environ.get(TRACE_ENV))
        self.trace = self.tracer is not None
        self.validate = DISABLE_VALIDATION_ENV not in os.environ
        self.platforms = []
        self.devices = []
        self.statuses = []
        self.allocations = AllocationMap()
        self.queue_ids = itertools.count(1)


class _State:
    __slots__ = ("ctx", "refcount", "lock", "last_statuses")

    def __init__(self) -> None:
        self.ctx: Context | None = None
        self.refcount = 0
        self.lock = threading.Lock()
        self.last_statuses: list[BackendStatus] = []


STATE = _State()

UNINITIALIZED_DETAILS = "liboffload has not been initialized - please call olInit before using this API"


def uninitialized() -> OffloadError:
    return OffloadError(ErrorCode.UNINITIALIZED, UNINITIALIZED_DETAILS)


def _build_platform(ctx: Context, bound: BoundBackend, natives: list[Any], infos: list[dict[Any, Any]]) -> Platform:
    platform: Platform = Platform._make(ctx, backend=bound, name=bound.name, kind=bound.kind, devices=[])
    for index, (native, info) in enumerate(zip(natives, infos)):
        device: Device = Device._make(
            ctx,
            backend=bound,
            native=native,
            platform=platform,
            index=index,
            info=info,
            info_cache={},
            is_host=bound.kind is PlatformBackend.HOST,
            lock=threading.Lock(),
            parked=[],
            queues=set(),
            programs=set(),
        )
        platform.devices.append(device)
    return platform


def init() -> None:
    """``olInit``: the first call builds the context; later calls count references."""
    with STATE.lock:
        if STATE.ctx is not None:
            STATE.refcount += 1
            return
        ctx = Context()
        loaded, statuses = load_backends()
        for bound, natives, infos in loaded:
            platform = _build_platform(ctx, bound, natives, infos)
            ctx.platforms.append(platform)
            ctx.devices.extend(platform.devices)
        ctx.statuses = statuses
        STATE.last_statuses = statuses
        STATE.ctx = ctx
        STATE.refcount = 1


def _collect(errors: list[OffloadError], what: str, call: Any, *args: Any) -> None:
    """Call a backend hook during teardown, keeping its failure instead of raising it."""
    try:
        call(*args)
    except Exception as exc:
        errors.append(as_offload_error(exc, what))


def shutdown() -> None:
    """``olShutDown``: the last call tears everything down, every failure joined, none dropped."""
    with STATE.lock:
        ctx = STATE.ctx
        if ctx is None:
            raise uninitialized()
        STATE.refcount -= 1
        if STATE.refcount:
            return
        STATE.ctx = None
        errors = teardown(ctx)
    error = join_errors(errors)
    if error is not None:
        raise error


def teardown(ctx: Context) -> list[OffloadError]:
    """Release every queue, program, allocation, device and backend of ``ctx``; return the errors."""
    errors: list[OffloadError] = []
    leftover = ctx.allocations.drain()
    for platform in ctx.platforms:
        bound = platform.backend
        for device in platform.devices:
            with device.lock:
                queues = [q.native for q in device.queues] + device.parked
                for queue in device.queues:
                    queue._ctx = None
                device.queues.clear()
                device.parked = []
                programs = list(device.programs)
                device.programs.clear()
            for native_queue in queues:
                _collect(errors, f"{bound.name}: synchronize", bound.synchronize, device.native, native_queue, True)
            for program in programs:
                program._ctx = None
                for symbol in program.symbols.values():
                    symbol._ctx = None
                _collect(errors, f"{bound.name}: unload_binary", bound.unload_binary, device.native, program.image)
            if "mem_free" in bound.implemented:
                for allocation in leftover:
                    if allocation.device is device:
                        _collect(
                            errors,
                            f"{bound.name}: mem_free",
                            bound.mem_free,
                            device.native,
                            allocation.start,
                            allocation.alloc_type,
                        )
            device._ctx = None
        errors.extend(release_backend(bound, [d.native for d in platform.devices]))
        platform._ctx = None
    return errors


def device_info_value(device: Device, prop: DeviceInfo) -> Any:
    """A device property: the backend's answer, else the default documented at
    ``hookspecs.get_device_info`` (liboffload R1's synthesised ones, plus those that follow from
    another answer), else ``UNIMPLEMENTED``."""
    try:
        return device.info[prop]
    except KeyError:
        pass
    from ._enums import DeviceFpCapabilityFlag, DeviceType

    if prop is DeviceInfo.TYPE:
        return DeviceType.HOST if device.is_host else DeviceType.GPU
    if prop is DeviceInfo.PLATFORM:
        return device.platform
    if prop in (DeviceInfo.SINGLE_FP_CONFIG, DeviceInfo.DOUBLE_FP_CONFIG):
        return DeviceFpCapabilityFlag(127)
    if prop is DeviceInfo.HALF_FP_CONFIG:
        return DeviceFpCapabilityFlag(0)
    if prop in (DeviceInfo.SINGLE_FP_SUPPORT, DeviceInfo.DOUBLE_FP_SUPPORT, DeviceInfo.HALF_FP_SUPPORT):
        return bool(device_info_value(device, DeviceInfo[prop.name.replace("_SUPPORT", "_CONFIG")]))
    if DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR <= prop <= DeviceInfo.NATIVE_VECTOR_WIDTH_HALF:
        return 0 if prop is DeviceInfo.NATIVE_VECTOR_WIDTH_HALF else 1
    if prop is DeviceInfo.MAX_MEM_ALLOC_SIZE and DeviceInfo.GLOBAL_MEM_SIZE in device.info:
        return device.info[DeviceInfo.GLOBAL_MEM_SIZE]
    if prop is DeviceInfo.PRODUCT_NAME and DeviceInfo.NAME in device.info:
        return device.info[DeviceInfo.NAME]
    raise OffloadError(
        ErrorCode.UNIMPLEMENTED,
        f"OL_DEVICE_INFO_{prop.name}: plugin did not provide a response for this information",
    )
