"""One HIP device: its ordinal, gfx target, stream pool, and its ``DeviceInfo`` answers.

Numeric properties come from ``hipDeviceGetAttribute`` (present in every HIP version); the gfx
target name (``gcnArchName``) only exists in ``hipGetDeviceProperties``'s struct, which is read
for that one field.
"""

from __future__ import annotations

import threading
from typing import Any

from offload import DeviceFpCapabilityFlag, DeviceInfo, Dimensions

from ._code_object import Target
from ._errors import raise_hip_error

__all__ = ["HipDevice", "check", "probe_info", "select"]

UINT32_MAX = (1 << 32) - 1
AMD_VENDOR_ID = 0x1002


class HipDevice:
    """A HIP device of this process: ordinal, target, and the streams kept for reuse."""

    __slots__ = ("ordinal", "target", "streams", "events", "lock", "select")

    def __init__(self, ordinal: int, target: Target, select: bool) -> None:
        self.ordinal = ordinal
        self.target = target
        self.streams: list[Any] = []  # idle hipStream_t handles (the pool)
        self.events: set[Any] = set()  # live HipEvents (destroyed by deinit_device if still alive)
        self.lock = threading.Lock()
        #: Whether calls that act on "the current device" must hipSetDevice first (more than one device).
        self.select = select

    def __repr__(self) -> str:
        return f"<HipDevice {self.ordinal} {self.target}>"


def check(hip: Any, call: str, result: Any) -> Any:
    """Raise for a failed hip-python result tuple; return its value (its values, if several)."""
    if result[0]:
        raise_hip_error(hip, call, result[0])
    return result[1] if len(result) == 2 else result[1:]


def select(hip: Any, device: HipDevice) -> None:
    """Make ``device`` HIP's current device of this thread (where there is more than one)."""
    if device.select:
        check(hip, "hipSetDevice", hip.hipSetDevice(device.ordinal))


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(value).split("\0", 1)[0].strip()


def read_target(hip: Any, ordinal: int) -> Target:
    """The device's gfx target from ``hipDeviceProp_t.gcnArchName``."""
    try:  # hip-python 10.x: hipGetDeviceProperties(deviceId) -> (status, props)
        props = check(hip, "hipGetDeviceProperties", hip.hipGetDeviceProperties(ordinal))
    except TypeError:  # 6.4 / 7.x: hipGetDeviceProperties(props, deviceId) -> (status,)
        props = hip.hipDeviceProp_t()
        check(hip, "hipGetDeviceProperties", (*hip.hipGetDeviceProperties(props, ordinal), None))
    return Target.parse(_text(props.gcnArchName))


def probe_info(hip: Any, device: HipDevice) -> dict[DeviceInfo, Any]:
    """Every ``DeviceInfo`` property of ``device`` (PLATFORM and TYPE are the core's)."""
    ordinal = device.ordinal
    A = hip.hipDeviceAttribute_t

    def attr(name: str) -> int:
        return int(check(hip, f"hipDeviceGetAttribute({name})", hip.hipDeviceGetAttribute(getattr(A, name), ordinal)))

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
    memory = int(check(hip, "hipDeviceTotalMem", hip.hipDeviceTotalMem(ordinal)))
    product = _text(check(hip, "hipDeviceGetName", hip.hipDeviceGetName(256, ordinal)))
    driver = int(check(hip, "hipDriverGetVersion", hip.hipDriverGetVersion()))
    runtime = int(check(hip, "hipRuntimeGetVersion", hip.hipRuntimeGetVersion()))
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
        DeviceInfo.DRIVER_VERSION: f"HIP {_hip_version(runtime)} (driver {driver})",
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
    }
    return info


def _hip_version(value: int) -> str:
    """HIP_VERSION = major * 10_000_000 + minor * 100_000 + patch."""
    return f"{value // 10_000_000}.{value // 100_000 % 100}.{value % 100_000}"


def _uid(hip: Any, ordinal: int, attr: Any) -> str:
    """``GPU-<uuid hex>`` (as ROCm names agents); the PCI location when the runtime has no UUID."""
    try:
        uuid = check(hip, "hipDeviceGetUuid", hip.hipDeviceGetUuid(ordinal))
        raw = bytes(uuid.bytes) if hasattr(uuid, "bytes") else b""
    except Exception:  # older runtimes (and hip-python lines) lack it: fall back below
        raw = b""
    if raw.strip(b"\0"):
        return "GPU-" + raw.hex()
    domain = attr("hipDeviceAttributePciDomainId")
    bus = attr("hipDeviceAttributePciBusId")
    dev = attr("hipDeviceAttributePciDeviceId")
    return f"PCI-{domain:04x}:{bus:02x}:{dev:02x}"
