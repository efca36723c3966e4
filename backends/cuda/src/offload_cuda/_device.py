"""One CUDA device: its ordinal, its primary context (made current on whichever thread calls
in), and its properties read from the driver."""

from __future__ import annotations

from typing import Any

from offload import DeviceFpCapabilityFlag as Fp
from offload import DeviceInfo, Dimensions

from ._driver import check

__all__ = ["CudaDevice"]

_CTX_SCHED_BLOCKING_SYNC = 0x4

# CUdevice_attribute values (cuda.h)
_A = {
    "MAX_THREADS_PER_BLOCK": 1,
    "MAX_BLOCK_DIM_X": 2,
    "MAX_BLOCK_DIM_Y": 3,
    "MAX_BLOCK_DIM_Z": 4,
    "MAX_GRID_DIM_X": 5,
    "MAX_GRID_DIM_Y": 6,
    "MAX_GRID_DIM_Z": 7,
    "MAX_SHARED_MEMORY_PER_BLOCK": 8,
    "WARP_SIZE": 10,
    "CLOCK_RATE": 13,
    "MULTIPROCESSOR_COUNT": 16,
    "MEMORY_CLOCK_RATE": 36,
    "COMPUTE_CAPABILITY_MAJOR": 75,
    "COMPUTE_CAPABILITY_MINOR": 76,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
    "CONCURRENT_MANAGED_ACCESS": 89,
    "COOPERATIVE_LAUNCH": 95,
}

_FULL_FP = (
    Fp.CORRECTLY_ROUNDED_DIVIDE_SQRT
    | Fp.ROUND_TO_NEAREST
    | Fp.ROUND_TO_ZERO
    | Fp.ROUND_TO_INF
    | Fp.INF_NAN
    | Fp.DENORM
    | Fp.FMA
)


class CudaDevice:
    """A GPU on its primary context (retained in ``__init__``, released by ``release``)."""

    __slots__ = ("driver", "ordinal", "handle", "context", "context_address", "legacy", "attributes",
                 "peers", "no_peers", "sm", "name", "driver_version")  # fmt: skip

    def __init__(self, driver: Any, ordinal: int) -> None:
        self.driver = driver
        self.ordinal = ordinal
        self.handle = check(driver, driver.cuDeviceGet(ordinal), "cuDeviceGet")
        self.attributes: dict[str, int] = {}
        for key, attribute in _A.items():
            value = check(
                driver,
                driver.cuDeviceGetAttribute(driver.CUdevice_attribute(attribute), self.handle),
                f"cuDeviceGetAttribute({key})",
            )
            self.attributes[key] = int(value)
        self.sm = self.attributes["COMPUTE_CAPABILITY_MAJOR"] * 10 + self.attributes["COMPUTE_CAPABILITY_MINOR"]
        raw = check(driver, driver.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
        self.name = bytes(raw).split(b"\0", 1)[0].decode(errors="replace").strip()
        self.driver_version = int(check(driver, driver.cuDriverGetVersion(), "cuDriverGetVersion"))
        self.peers: set[int] = set()  # ordinals this context may access (peer access enabled)
        self.no_peers: set[int] = set()  # ordinals whose peer access the driver refused
        self.legacy = driver.CUstream(0)  # the legacy default stream, for work without a queue
        # The primary context is shared with every other library of the process: its scheduling
        # flags are set (blocking sync, so a synchronize sleeps) only while nobody holds it active;
        # an active one keeps the flags its owner chose. Retained last, so nothing above can fail
        # with the context held.
        _, active = check(driver, driver.cuDevicePrimaryCtxGetState(self.handle), "cuDevicePrimaryCtxGetState")
        if not active:
            check(
                driver,
                driver.cuDevicePrimaryCtxSetFlags(self.handle, _CTX_SCHED_BLOCKING_SYNC),
                "cuDevicePrimaryCtxSetFlags",
            )
        self.context = check(driver, driver.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self.context_address = int(self.context)

    def activate(self) -> None:
        """Make this device's primary context current on the calling thread.

        Asked of the driver each time (``cuCtxGetCurrent``, as upstream does): another library in
        the process (cuda.core, CuPy, torch) may have made another context current since.
        """
        d = self.driver
        result, current = d.cuCtxGetCurrent()
        if not result and int(current) == self.context_address:
            return
        check(d, d.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def release(self) -> None:
        """Release the primary context (the driver reports leaks there)."""
        check(self.driver, self.driver.cuDevicePrimaryCtxRelease(self.handle), "cuDevicePrimaryCtxRelease")

    def info(self) -> dict[DeviceInfo, Any]:
        """Every DeviceInfo property but PLATFORM and TYPE, from the driver."""
        d, a = self.driver, self.attributes
        uuid = bytes(check(d, d.cuDeviceGetUuid(self.handle), "cuDeviceGetUuid").bytes)[:16]
        h = uuid.hex()
        uid = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        version = int(check(d, d.cuDriverGetVersion(), "cuDriverGetVersion"))
        total = int(check(d, d.cuDeviceTotalMem(self.handle), "cuDeviceTotalMem"))
        block = Dimensions(a["MAX_BLOCK_DIM_X"], a["MAX_BLOCK_DIM_Y"], a["MAX_BLOCK_DIM_Z"])
        grid = (a["MAX_GRID_DIM_X"], a["MAX_GRID_DIM_Y"], a["MAX_GRID_DIM_Z"])
        u32 = 0xFFFFFFFF
        work = Dimensions(*(min(u32, g * b) for g, b in zip(grid, block, strict=True)))
        return {
            DeviceInfo.NAME: self.name,
            DeviceInfo.PRODUCT_NAME: self.name,
            DeviceInfo.UID: uid,
            DeviceInfo.VENDOR: "NVIDIA Corporation",
            DeviceInfo.DRIVER_VERSION: f"{version // 1000}.{version % 1000 // 10}",
            DeviceInfo.MAX_WORK_GROUP_SIZE: a["MAX_THREADS_PER_BLOCK"],
            DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: block,
            DeviceInfo.MAX_WORK_SIZE: min(u32, work.x * work.y * work.z),
            DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: work,
            DeviceInfo.VENDOR_ID: 0x10DE,
            DeviceInfo.NUM_COMPUTE_UNITS: a["MULTIPROCESSOR_COUNT"],
            DeviceInfo.MAX_CLOCK_FREQUENCY: a["CLOCK_RATE"] // 1000,
            DeviceInfo.MEMORY_CLOCK_RATE: a["MEMORY_CLOCK_RATE"] // 1000,
            DeviceInfo.ADDRESS_BITS: 64,
            DeviceInfo.MAX_MEM_ALLOC_SIZE: total,
            DeviceInfo.GLOBAL_MEM_SIZE: total,
            DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: a["MAX_SHARED_MEMORY_PER_BLOCK"],
            DeviceInfo.NUM_LANES: a["WARP_SIZE"],
            DeviceInfo.SINGLE_FP_CONFIG: _FULL_FP,
            DeviceInfo.DOUBLE_FP_CONFIG: _FULL_FP,
            DeviceInfo.HALF_FP_CONFIG: _FULL_FP,
            DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR: 1,
            DeviceInfo.NATIVE_VECTOR_WIDTH_SHORT: 1,
            DeviceInfo.NATIVE_VECTOR_WIDTH_INT: 1,
            DeviceInfo.NATIVE_VECTOR_WIDTH_LONG: 1,
            DeviceInfo.NATIVE_VECTOR_WIDTH_FLOAT: 1,
            DeviceInfo.NATIVE_VECTOR_WIDTH_DOUBLE: 1,
            DeviceInfo.NATIVE_VECTOR_WIDTH_HALF: 1,
            DeviceInfo.SINGLE_FP_SUPPORT: True,
            DeviceInfo.DOUBLE_FP_SUPPORT: True,
            DeviceInfo.HALF_FP_SUPPORT: a["COMPUTE_CAPABILITY_MAJOR"] >= 6,
            DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT: bool(a["COOPERATIVE_LAUNCH"]),
        }
