"""A device's properties as liboffload's ``DeviceInfo``, read through the ICD loader (``_icd``):
the core asks for them at ``olInit``, so they cost no PyOpenCL import. The values are the ones
PyOpenCL's ``Device`` attributes give (the same ``clGetDeviceInfo`` queries), stripped of
surrounding blanks as before."""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import Any

from offload import DeviceFpCapabilityFlag, DeviceInfo, DeviceType

from ._icd import DEVICE_NAME, IcdError, Loader

__all__ = ["FP_FLAGS", "device_info"]

_U32_MAX = 0xFFFFFFFF
_uint, _ulong, _size = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
#: cl_device_info values (CL/cl.h)
_TYPE = 0x1000
_VENDOR_ID = 0x1001
_MAX_COMPUTE_UNITS = 0x1002
_MAX_WORK_GROUP_SIZE = 0x1004
_MAX_WORK_ITEM_SIZES = 0x1005
_MAX_CLOCK_FREQUENCY = 0x100C
_ADDRESS_BITS = 0x100D
_MAX_MEM_ALLOC_SIZE = 0x1010
_SINGLE_FP_CONFIG = 0x101B
_GLOBAL_MEM_SIZE = 0x101F
_LOCAL_MEM_SIZE = 0x1023
_VENDOR = 0x102C
_DRIVER_VERSION = 0x102D
_DOUBLE_FP_CONFIG = 0x1032
_HALF_FP_CONFIG = 0x1033
#: CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR .. _HALF are 0x1036 .. 0x103C, in DeviceInfo's order
_NATIVE_VECTOR_WIDTHS = {
    p: 0x1036 + p - DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR
    for p in DeviceInfo
    if DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR <= p <= DeviceInfo.NATIVE_VECTOR_WIDTH_HALF
}
_NATIVE_VECTOR_WIDTH_INT = _NATIVE_VECTOR_WIDTHS[DeviceInfo.NATIVE_VECTOR_WIDTH_INT]
_DEVICE_TYPE_CPU = 1 << 1
#: cl_device_fp_config bit (CL_FP_DENORM ...) -> ol_device_fp_capability_flag_t bit
FP_FLAGS = {
    1 << 0: DeviceFpCapabilityFlag.DENORM,
    1 << 1: DeviceFpCapabilityFlag.INF_NAN,
    1 << 2: DeviceFpCapabilityFlag.ROUND_TO_NEAREST,
    1 << 3: DeviceFpCapabilityFlag.ROUND_TO_ZERO,
    1 << 4: DeviceFpCapabilityFlag.ROUND_TO_INF,
    1 << 5: DeviceFpCapabilityFlag.FMA,
    1 << 6: DeviceFpCapabilityFlag.SOFT_FLOAT,
    1 << 7: DeviceFpCapabilityFlag.CORRECTLY_ROUNDED_DIVIDE_SQRT,
}


def _fp_config(loader: Loader, device: int, param: int) -> DeviceFpCapabilityFlag:
    try:
        bits = loader.device_value(device, param, _ulong)
    except IcdError:  # CL_INVALID_VALUE: the device has no such type (half, double)
        return DeviceFpCapabilityFlag(0)
    return DeviceFpCapabilityFlag(sum((flag for bit, flag in FP_FLAGS.items() if bits & bit), DeviceFpCapabilityFlag(0)))


def device_info(loader: Loader, device: int, uid: str) -> Mapping[DeviceInfo, Any]:
    """Every property of ``device`` (a ``cl_device_id``) the backend gives; raises ``IcdError``
    when the driver refuses a query every OpenCL device answers."""
    value = loader.device_value
    text = loader.device_text
    group_size = min(value(device, _MAX_WORK_GROUP_SIZE, _size), _U32_MAX)
    sizes = (list(loader.device_sizes(device, _MAX_WORK_ITEM_SIZES)) + [1, 1])[:3]
    return {
        DeviceInfo.TYPE: DeviceType.CPU if value(device, _TYPE, _ulong) & _DEVICE_TYPE_CPU else DeviceType.GPU,
        DeviceInfo.NAME: text(device, DEVICE_NAME).strip(),
        DeviceInfo.UID: uid,
        DeviceInfo.VENDOR: text(device, _VENDOR).strip(),
        DeviceInfo.DRIVER_VERSION: text(device, _DRIVER_VERSION).strip(),
        DeviceInfo.MAX_WORK_GROUP_SIZE: group_size,
        DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: tuple(min(int(v), group_size) for v in sizes),
        DeviceInfo.MAX_WORK_SIZE: _U32_MAX,  # global sizes are size_t in OpenCL
        DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: (_U32_MAX, _U32_MAX, _U32_MAX),
        DeviceInfo.VENDOR_ID: value(device, _VENDOR_ID, _uint),
        DeviceInfo.NUM_COMPUTE_UNITS: value(device, _MAX_COMPUTE_UNITS, _uint),
        DeviceInfo.MAX_CLOCK_FREQUENCY: value(device, _MAX_CLOCK_FREQUENCY, _uint),
        DeviceInfo.MEMORY_CLOCK_RATE: 0,  # OpenCL does not report it
        DeviceInfo.ADDRESS_BITS: value(device, _ADDRESS_BITS, _uint),
        DeviceInfo.MAX_MEM_ALLOC_SIZE: value(device, _MAX_MEM_ALLOC_SIZE, _ulong),
        DeviceInfo.GLOBAL_MEM_SIZE: value(device, _GLOBAL_MEM_SIZE, _ulong),
        DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: value(device, _LOCAL_MEM_SIZE, _ulong),
        DeviceInfo.NUM_LANES: value(device, _NATIVE_VECTOR_WIDTH_INT, _uint),  # OpenCL has no warp size
        DeviceInfo.SINGLE_FP_CONFIG: _fp_config(loader, device, _SINGLE_FP_CONFIG),
        DeviceInfo.DOUBLE_FP_CONFIG: _fp_config(loader, device, _DOUBLE_FP_CONFIG),
        DeviceInfo.HALF_FP_CONFIG: _fp_config(loader, device, _HALF_FP_CONFIG),
        **{p: value(device, param, _uint) for p, param in _NATIVE_VECTOR_WIDTHS.items()},
    }
