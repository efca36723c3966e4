"""One HIP device: its ordinal, gfx target, the pool of its streams, its live events, and its
``DeviceInfo`` answers. ``activate`` makes it HIP's current device of the calling thread.

Numeric properties come from ``hipDeviceGetAttribute`` (present in every HIP version); the gfx
target name (``gcnArchName``) only exists in ``hipGetDeviceProperties``'s struct, which is read
for that one field.
"""

from __future__ import annotations

import threading
from typing import Any

from offload import DeviceFpCapabilityFlag, DeviceInfo, Dimensions
from offload.backend.support import ResourcePool

from ._code_object import Target
from ._driver import check
from ._versions import hip_version_text

__all__ = ["HipDevice", "probe_info", "read_target"]

UINT32_MAX = (1 << 32) - 1
AMD_VENDOR_ID = 0x1002


HIP_STREAM_NON_BLOCKING = 1


class HipDevice:
    """A HIP device of this process: ordinal, target, the streams kept for reuse (``streams``),
    and the events alive (destroyed by ``deinit_device`` if still alive then)."""

    __slots__ = ("hip", "module_launch", "ordinal", "target", "streams", "events", "peers", "lock", "select", "native_record")

    def __init__(self, hip: Any, ordinal: int, target: Target, select: bool) -> None:
        self.hip = hip
        self.module_launch = hip.hipModuleLaunchKernel  # bound once: the launch hot path
        self.ordinal = ordinal
        self.target = target
        self.streams: ResourcePool[Any] = ResourcePool(
            self._create_stream, self._destroy_stream, f"streams of device {ordinal}"
        )
        self.events: set[Any] = set()  # live HipEvents
        self.peers: dict[int, bool] = {}  # ordinal -> whether peer access to it is enabled (asked once)
        self.lock = threading.Lock()
        #: Whether calls that act on "the current device" must hipSetDevice first (more than one device).
        self.select = select
        self.native_record: Any = None  # the native entry points' record of it (None without them)

    def __repr__(self) -> str:
        return f"<HipDevice {self.ordinal} {self.target}>"

    def activate(self) -> None:
        """Make this device HIP's current device of the calling thread (where there is more than one)."""
        if self.select:
            check(self.hip, self.hip.hipSetDevice(self.ordinal), "hipSetDevice")

    def recycle(self, queue: Any) -> None:
        """A released queue's stream back to ``streams`` (``synchronize``); an adopted stream
        stays its owner's."""
        if not queue.adopted:
            self.streams.release(queue.stream)

    def _create_stream(self) -> Any:
        self.activate()
        return check(self.hip, self.hip.hipStreamCreateWithFlags(HIP_STREAM_NON_BLOCKING), "hipStreamCreateWithFlags")

    def _destroy_stream(self, stream: Any) -> None:
        check(self.hip, self.hip.hipStreamDestroy(stream), "hipStreamDestroy")


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(value).split("\0", 1)[0].strip()


def read_target(hip: Any, ordinal: int) -> Target:
    """The device's gfx target from ``hipDeviceProp_t.gcnArchName``."""
    try:  # hip-python 10.x: hipGetDeviceProperties(deviceId) -> (status, props)
        props = check(hip, hip.hipGetDeviceProperties(ordinal), "hipGetDeviceProperties")
    except TypeError:  # 6.4 / 7.x: hipGetDeviceProperties(props, deviceId) -> (status,)
        props = hip.hipDeviceProp_t()
        check(hip, hip.hipGetDeviceProperties(props, ordinal), "hipGetDeviceProperties")
    return Target.parse(_text(props.gcnArchName))


def probe_info(device: HipDevice) -> dict[DeviceInfo, Any]:
    """Every ``DeviceInfo`` property of ``device`` (PLATFORM and TYPE are the core's)."""
    hip, ordinal = device.hip, device.ordinal
    device.activate()
    A = hip.hipDeviceAttribute_t

    def attr(name: str) -> int:
        return int(check(hip, hip.hipDeviceGetAttribute(getattr(A, name), ordinal), f"hipDeviceGetAttribute({name})"))

    block = (
        attr("hipDeviceAttributeMaxBlockDimX"),
        attr("hipDeviceAttributeMaxBlockDimY"),
        attr("hipDeviceAttributeMaxBlockDimZ"),
    )
    grid = (
        attr("hipDeviceAttributeMaxGridDimX"),
        attr("hipDeviceAttributeMaxGridDimY"),
        attr("hipDeviceAttributeMaxGridDimZ"),
    )
    work = tuple(min(g * b, UINT32_MAX) for g, b in zip(grid, block, strict=True))
    total_work = min(work[0] * work[1] * work[2], UINT32_MAX)
    memory = int(check(hip, hip.hipDeviceTotalMem(ordinal), "hipDeviceTotalMem"))
    product = _text(check(hip, hip.hipDeviceGetName(256, ordinal), "hipDeviceGetName"))
    driver = int(check(hip, hip.hipDriverGetVersion(), "hipDriverGetVersion"))
    runtime = int(check(hip, hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion"))
    single = (
        DeviceFpCapabilityFlag.CORRECTLY_ROUNDED_DIVIDE_SQRT
        | DeviceFpCapabilityFlag.ROUND_TO_NEAREST
        | DeviceFpCapabilityFlag.ROUND_TO_ZERO
        | DeviceFpCapabilityFlag.ROUND_TO_INF
        | DeviceFpCapabilityFlag.INF_NAN
        | DeviceFpCapabilityFlag.DENORM
        | DeviceFpCapabilityFlag.FMA
    )
    double = single & ~DeviceFpCapabilityFlag.CORRECTLY_ROUNDED_DIVIDE_SQRT
    info: dict[DeviceInfo, Any] = {
        DeviceInfo.NAME: device.target.processor,
        DeviceInfo.PRODUCT_NAME: product or device.target.processor,
        DeviceInfo.UID: _uid(hip, ordinal, attr),
        DeviceInfo.VENDOR: "AMD",
        DeviceInfo.DRIVER_VERSION: f"HIP {hip_version_text(runtime)} (driver {driver})",
        DeviceInfo.MAX_WORK_GROUP_SIZE: attr("hipDeviceAttributeMaxThreadsPerBlock"),
        DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: Dimensions(*block),
        DeviceInfo.MAX_WORK_SIZE: total_work,
        DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: Dimensions(*work),
        DeviceInfo.VENDOR_ID: AMD_VENDOR_ID,
        DeviceInfo.NUM_COMPUTE_UNITS: attr("hipDeviceAttributeMultiprocessorCount"),
        DeviceInfo.MAX_CLOCK_FREQUENCY: attr("hipDeviceAttributeClockRate") // 1000,  # kHz -> MHz
        DeviceInfo.MEMORY_CLOCK_RATE: attr("hipDeviceAttributeMemoryClockRate") // 1000,
        DeviceInfo.ADDRESS_BITS: 64,
        DeviceInfo.MAX_MEM_ALLOC_SIZE: memory,
        DeviceInfo.GLOBAL_MEM_SIZE: memory,
        DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: attr("hipDeviceAttributeMaxSharedMemoryPerBlock"),
        DeviceInfo.NUM_LANES: attr("hipDeviceAttributeWarpSize"),
        DeviceInfo.SINGLE_FP_CONFIG: single,
        DeviceInfo.DOUBLE_FP_CONFIG: double,
        DeviceInfo.HALF_FP_CONFIG: double,
        DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR: 4,  # AMDGPU packs these in 32-bit registers
        DeviceInfo.NATIVE_VECTOR_WIDTH_SHORT: 2,
        DeviceInfo.NATIVE_VECTOR_WIDTH_INT: 1,
        DeviceInfo.NATIVE_VECTOR_WIDTH_LONG: 1,
        DeviceInfo.NATIVE_VECTOR_WIDTH_FLOAT: 1,
        DeviceInfo.NATIVE_VECTOR_WIDTH_DOUBLE: 1,
        DeviceInfo.NATIVE_VECTOR_WIDTH_HALF: 2,
        DeviceInfo.SINGLE_FP_SUPPORT: True,
        DeviceInfo.DOUBLE_FP_SUPPORT: True,
        DeviceInfo.HALF_FP_SUPPORT: True,
        DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT: bool(attr("hipDeviceAttributeCooperativeLaunch")),
    }
    return info


def _uid(hip: Any, ordinal: int, attr: Any) -> str:
    """``GPU-<uuid hex>`` (as ROCm names agents); the PCI location when the runtime has no UUID."""
    try:
        uuid = check(hip, hip.hipDeviceGetUuid(ordinal), "hipDeviceGetUuid")
        raw = bytes(uuid.bytes) if hasattr(uuid, "bytes") else b""
    except Exception:  # older runtimes (and hip-python lines) lack it: fall back below
        raw = b""
    if raw.strip(b"\0"):
        return "GPU-" + raw.hex()
    domain = attr("hipDeviceAttributePciDomainId")
    bus = attr("hipDeviceAttributePciBusId")
    dev = attr("hipDeviceAttributePciDeviceId")
    return f"PCI-{domain:04x}:{bus:02x}:{dev:02x}"
