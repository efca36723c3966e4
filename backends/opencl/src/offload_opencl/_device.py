"""OpenCL devices with shared virtual memory: discovery (``discover``), one context per OpenCL
platform, and the device's properties as liboffload's ``DeviceInfo`` (``info``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pyopencl as cl

from offload import DeviceFpCapabilityFlag, DeviceInfo, DeviceType

__all__ = ["OpenCLDevice", "discover"]

_SVM = cl.device_svm_capabilities
_U32_MAX = 0xFFFFFFFF
#: cl_device_fp_config bit -> ol_device_fp_capability_flag_t bit
_FP_FLAGS = {
    cl.device_fp_config.DENORM: DeviceFpCapabilityFlag.DENORM,
    cl.device_fp_config.INF_NAN: DeviceFpCapabilityFlag.INF_NAN,
    cl.device_fp_config.ROUND_TO_NEAREST: DeviceFpCapabilityFlag.ROUND_TO_NEAREST,
    cl.device_fp_config.ROUND_TO_ZERO: DeviceFpCapabilityFlag.ROUND_TO_ZERO,
    cl.device_fp_config.ROUND_TO_INF: DeviceFpCapabilityFlag.ROUND_TO_INF,
    cl.device_fp_config.FMA: DeviceFpCapabilityFlag.FMA,
    cl.device_fp_config.SOFT_FLOAT: DeviceFpCapabilityFlag.SOFT_FLOAT,
    cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT: DeviceFpCapabilityFlag.CORRECTLY_ROUNDED_DIVIDE_SQRT,
}


def _fp_config(device: cl.Device, attribute: str) -> DeviceFpCapabilityFlag:
    try:
        bits = int(getattr(device, attribute))
    except cl.Error:  # CL_INVALID_VALUE: the device has no such type (half, double)
        return DeviceFpCapabilityFlag(0)
    return DeviceFpCapabilityFlag(sum((flag for bit, flag in _FP_FLAGS.items() if bits & bit), DeviceFpCapabilityFlag(0)))


class OpenCLDevice:
    """One OpenCL device on its platform's context, with a queue for synchronous work
    (``sync_queue``) and the live SVM allocations (address -> ``SVMAllocation``)."""

    def __init__(self, platform: cl.Platform, device: cl.Device, context: cl.Context, ordinal: int) -> None:
        self.platform = platform
        self.device = device
        self.context = context
        self.ordinal = ordinal
        self.fine_grained = bool(device.svm_capabilities & _SVM.FINE_GRAIN_BUFFER)
        self.takes_il = "SPIR-V" in (getattr(device, "il_version", "") or "")
        self.sync_queue = cl.CommandQueue(context, device)
        self.allocations: dict[int, cl.SVMAllocation] = {}
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<OpenCL device {self.ordinal}: {self.device.name} ({self.platform.name})>"

    def info(self) -> Mapping[DeviceInfo, Any]:
        d = self.device
        per_dim = tuple(min(int(v), int(d.max_work_group_size), _U32_MAX) for v in (list(d.max_work_item_sizes) + [1, 1])[:3])
        cpu = bool(d.type & cl.device_type.CPU)
        return {
            DeviceInfo.TYPE: DeviceType.CPU if cpu else DeviceType.GPU,
            DeviceInfo.NAME: d.name.strip(),
            DeviceInfo.UID: f"{self.platform.name.strip()}/{d.name.strip()}/{self.ordinal}",
            DeviceInfo.VENDOR: d.vendor.strip(),
            DeviceInfo.DRIVER_VERSION: d.driver_version.strip(),
            DeviceInfo.MAX_WORK_GROUP_SIZE: min(int(d.max_work_group_size), _U32_MAX),
            DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: per_dim,
            DeviceInfo.MAX_WORK_SIZE: _U32_MAX,  # global sizes are size_t in OpenCL
            DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: (_U32_MAX, _U32_MAX, _U32_MAX),
            DeviceInfo.VENDOR_ID: int(d.vendor_id),
            DeviceInfo.NUM_COMPUTE_UNITS: int(d.max_compute_units),
            DeviceInfo.MAX_CLOCK_FREQUENCY: int(d.max_clock_frequency),
            DeviceInfo.MEMORY_CLOCK_RATE: 0,  # OpenCL does not report it
            DeviceInfo.ADDRESS_BITS: int(d.address_bits),
            DeviceInfo.MAX_MEM_ALLOC_SIZE: int(d.max_mem_alloc_size),
            DeviceInfo.GLOBAL_MEM_SIZE: int(d.global_mem_size),
            DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: int(d.local_mem_size),
            DeviceInfo.NUM_LANES: int(d.native_vector_width_int),  # OpenCL has no warp size
            DeviceInfo.SINGLE_FP_CONFIG: _fp_config(d, "single_fp_config"),
            DeviceInfo.DOUBLE_FP_CONFIG: _fp_config(d, "double_fp_config"),
            DeviceInfo.HALF_FP_CONFIG: _fp_config(d, "half_fp_config"),
            **{
                p: int(getattr(d, p.name.lower()))
                for p in DeviceInfo
                if p.name.startswith("NATIVE_VECTOR_WIDTH_")
            },
        }


def discover() -> tuple[list[OpenCLDevice], list[str]]:
    """Every device with coarse-grained buffer SVM on every OpenCL platform (one context per
    platform), and a sentence for each device or platform left out."""
    devices: list[OpenCLDevice] = []
    skipped: list[str] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:  # CL_PLATFORM_NOT_FOUND_KHR: an ICD loader without drivers
        return [], [f"no OpenCL platform ({exc})"]
    for platform in platforms:
        usable = []
        for device in platform.get_devices():
            if device.svm_capabilities & _SVM.COARSE_GRAIN_BUFFER:
                usable.append(device)
            else:
                skipped.append(
                    f"{device.name.strip()} ({platform.name.strip()}): no shared virtual memory "
                    "(OpenCL 2.0 coarse-grained buffer SVM), which offload's void* addresses need"
                )
        if usable:
            context = cl.Context(usable)
            devices.extend(OpenCLDevice(platform, d, context, len(devices) + i) for i, d in enumerate(usable))
    return devices, skipped
