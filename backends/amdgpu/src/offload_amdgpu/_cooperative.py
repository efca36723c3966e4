"""Cooperative launches on HIP: ``hipModuleLaunchCooperativeKernel`` (every block resident at
once) and its limit, ``hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`` times the compute
units. HIP takes a cooperative launch's arguments as one pointer per parameter (no ``extra``), so
each points into a copy of the packed buffer at the parameter's offset.

A device without cooperative groups (``hipDeviceAttributeCooperativeLaunch`` 0) fails such a launch
with ``hipErrorLaunchFailure`` (clr's ``ihipLaunchKernel_validate``), which reads as a kernel
fault: the group count and the launch are refused first, as UNSUPPORTED naming the attribute (as
the CUDA backend refuses a device without ``CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH``)."""

from __future__ import annotations

import ctypes
from typing import Any

from offload import ErrorCode, KernelLaunchSizeArgs, OffloadError

from ._device import HipDevice
from ._driver import check
from ._errors import raise_for
from ._program import HipKernel
from ._queue import HipQueue

__all__ = ["launch_cooperative", "max_cooperative_groups", "supports_cooperative"]


def supports_cooperative(device: HipDevice) -> bool:
    """The device's ``hipDeviceAttributeCooperativeLaunch``."""
    hip = device.hip
    attribute = hip.hipDeviceAttribute_t.hipDeviceAttributeCooperativeLaunch
    return bool(check(hip, hip.hipDeviceGetAttribute(attribute, device.ordinal), "hipDeviceGetAttribute(CooperativeLaunch)"))


def _require_cooperative(device: HipDevice) -> None:
    if not supports_cooperative(device):
        raise OffloadError(
            ErrorCode.UNSUPPORTED,
            f"HIP device {device.ordinal} ({device.target}) does not support cooperative launches "
            "(hipDeviceAttributeCooperativeLaunch is 0)",
        )


def max_cooperative_groups(device: HipDevice, kernel: HipKernel, launch: KernelLaunchSizeArgs) -> int:
    """Blocks one compute unit holds at once times the device's compute units."""
    _require_cooperative(device)
    hip = device.hip
    device.activate()
    per_cu = check(
        hip,
        hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(kernel.function, launch.group_items, launch.dyn_shared_memory),
        "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
    )
    units = check(
        hip,
        hip.hipDeviceGetAttribute(hip.hipDeviceAttribute_t.hipDeviceAttributeMultiprocessorCount, device.ordinal),
        "hipDeviceGetAttribute(MultiprocessorCount)",
    )
    return int(per_cu) * int(units)


def launch_cooperative(
    device: HipDevice, queue: HipQueue | None, kernel: HipKernel, args: Any, launch: KernelLaunchSizeArgs
) -> None:
    """Enqueue a cooperative launch (``queue`` None: on the null stream, waited for)."""
    _require_cooperative(device)
    data = b"" if args is None else bytes(args)  # at least the parameters' extent: the core checked it
    params = kernel.info.params
    copy = ctypes.create_string_buffer(data[: kernel.param_bytes], max(1, kernel.param_bytes))
    base = ctypes.addressof(copy)
    pointers = (ctypes.c_void_p * max(1, len(params)))(*(base + p.offset for p in params))
    hip = device.hip
    gx, gy, gz = launch.num_groups
    bx, by, bz = launch.group_size
    stream = None if queue is None else queue.stream
    device.activate()
    status = hip.hipModuleLaunchCooperativeKernel(
        kernel.function, gx, gy, gz, bx, by, bz, launch.dyn_shared_memory, stream, ctypes.addressof(pointers) if params else None
    )[0]
    if status:
        raise_for(hip, status, "hipModuleLaunchCooperativeKernel")
    if queue is None:
        check(hip, hip.hipStreamSynchronize(None), "hipStreamSynchronize (after hipModuleLaunchCooperativeKernel)")
