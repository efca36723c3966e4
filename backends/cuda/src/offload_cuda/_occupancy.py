"""Occupancy queries and the device's cooperative-launch support, as the driver documents them.

NVIDIA's occupancy calculator (``cuda_occupancy.h``, ``cudaOccMaxBlocksPerSMSmemLimit``) fits zero
blocks of a kernel asking for more dynamic shared memory than its current
``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` (48 KiB until raised), so the limit is raised
first, as a launch of that size raises it (``CudaKernel.allow_dynamic_shared``; CUTLASS does the
same, NVIDIA/cutlass#532): the answer is then the one that launch gets. A cooperative launch needs
``CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH`` (``cuLaunchCooperativeKernel``); where the device lacks
it both the group count and the launch are refused as UNSUPPORTED, naming the attribute.
"""

from __future__ import annotations

from offload import ErrorCode, KernelLaunchSizeArgs, OffloadError

from ._device import CudaDevice
from ._driver import check
from ._program import CudaKernel

__all__ = ["max_cooperative_groups", "max_group_size", "require_cooperative"]

_NO_BLOCK_SIZE_LIMIT = 0


def _fit_dynamic_shared(device: CudaDevice, kernel: CudaKernel, size: int) -> None:
    """Make ``device`` current and raise ``kernel``'s dynamic shared memory limit to ``size`` where
    it is lower (OUT_OF_RESOURCES where the device cannot give that much)."""
    device.activate()  # cuFuncSetAttribute and the occupancy calls need the context current
    if size > kernel.dynamic_shared_limit:
        kernel.allow_dynamic_shared(device, size)


def max_group_size(device: CudaDevice, kernel: CudaKernel, dynamic_memory: int) -> int:
    """``cuOccupancyMaxPotentialBlockSize`` for ``dynamic_memory`` bytes of dynamic shared memory."""
    _fit_dynamic_shared(device, kernel, dynamic_memory)
    d = device.driver
    _, block = check(
        d,
        d.cuOccupancyMaxPotentialBlockSize(kernel.function, 0, dynamic_memory, _NO_BLOCK_SIZE_LIMIT),
        "cuOccupancyMaxPotentialBlockSize",
    )
    if int(block) <= 0:
        raise OffloadError(
            ErrorCode.OUT_OF_RESOURCES, f"kernel {kernel.name} cannot run with {dynamic_memory} bytes of local memory"
        )
    return int(block)


def require_cooperative(device: CudaDevice) -> None:
    """UNSUPPORTED where the device reports no CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH."""
    if not device.attributes["COOPERATIVE_LAUNCH"]:
        raise OffloadError(
            ErrorCode.UNSUPPORTED,
            f"{device.name} does not support cooperative launches (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)",
        )


def max_cooperative_groups(device: CudaDevice, kernel: CudaKernel, launch: KernelLaunchSizeArgs) -> int:
    """Blocks per multiprocessor (``cuOccupancyMaxActiveBlocksPerMultiprocessor``) times the
    multiprocessors: the most blocks that can be co-resident."""
    require_cooperative(device)
    _fit_dynamic_shared(device, kernel, launch.dyn_shared_memory)
    d = device.driver
    per_sm = check(
        d,
        d.cuOccupancyMaxActiveBlocksPerMultiprocessor(kernel.function, launch.group_items, launch.dyn_shared_memory),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    )
    return int(per_sm) * device.attributes["MULTIPROCESSOR_COUNT"]
