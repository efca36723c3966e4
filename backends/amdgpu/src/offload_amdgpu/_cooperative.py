"""Cooperative launches on HIP: ``hipModuleLaunchCooperativeKernel`` (every block resident at
once) and its limit, ``hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`` times the compute
units. HIP takes a cooperative launch's arguments as one pointer per parameter (no ``extra``), so
each points into a copy of the packed buffer at the parameter's offset."""

from __future__ import annotations

import ctypes
from typing import Any

from offload import KernelLaunchSizeArgs

from ._device import HipDevice
from ._driver import check
from ._errors import raise_for
from ._program import HipKernel
from ._queue import HipQueue

__all__ = ["launch_cooperative", "max_cooperative_groups"]


def max_cooperative_groups(device: HipDevice, kernel: HipKernel, launch: KernelLaunchSizeArgs) -> int:
    """Blocks one compute unit holds at once times the device's compute units."""
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
