"""Kernel launches: the packed argument buffer through ``hipModuleLaunchKernel``'s ``extra`` array.

The array (``HIP_LAUNCH_PARAM_BUFFER_POINTER``, ``..._SIZE``, ``..._END`` = 1, 2, 3), the size
word and a copy of the arguments lie in one block per thread, reused from launch to launch; HIP
copies the arguments before the call returns and appends the hidden arguments itself. HIP is given
exactly the parameters' extent (``offload.backend.support.launch_extent``), never a buffer's tail
padding, as on CUDA.
"""

from __future__ import annotations

import ctypes
import struct
from threading import get_ident
from typing import Any

from offload import KernelLaunchSizeArgs

from ._device import HipDevice
from ._driver import check
from ._errors import raise_for
from ._program import HipKernel
from ._queue import HipQueue

__all__ = ["LaunchBlocks", "launch_kernel"]

HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
HIP_LAUNCH_PARAM_END = 3


_HEADER = 48  # the extra array (5 pointers), then the size word, then the arguments
_packers: dict[int, struct.Struct] = {}


def _packer(size: int) -> struct.Struct:
    """``struct`` writing the size word and ``size`` argument bytes in one call (cached per size)."""
    packer = _packers.get(size)
    if packer is None:
        packer = _packers.setdefault(size, struct.Struct(f"<Q{size}s"))
    return packer


class LaunchBlock:
    """One thread's launch block: the ``extra`` array, the size word it points to, and a copy of
    the arguments it points to. HIP reads it during the launch call only."""

    __slots__ = ("capacity", "buffer", "address")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.buffer = ctypes.create_string_buffer(_HEADER + capacity)
        self.address = base = ctypes.addressof(self.buffer)
        extra = (
            HIP_LAUNCH_PARAM_BUFFER_POINTER, base + _HEADER,
            HIP_LAUNCH_PARAM_BUFFER_SIZE, base + 40,
            HIP_LAUNCH_PARAM_END,
        )  # fmt: skip
        struct.pack_into("<5Q", self.buffer, 0, *extra)


class LaunchBlocks:
    """The launch block of each thread (by thread id; a dead thread's block is reused by its id)."""

    __slots__ = ("_blocks",)

    def __init__(self) -> None:
        self._blocks: dict[int, LaunchBlock] = {}

    def pack(self, args: bytes, size: int) -> int:
        """Copy the first ``size`` bytes of ``args`` into this thread's block; return the ``extra`` address."""
        ident = get_ident()
        block = self._blocks.get(ident)
        if block is None or size > block.capacity:
            block = self._blocks[ident] = LaunchBlock(max(256, 2 * size))
        (_packers.get(size) or _packer(size)).pack_into(block.buffer, 40, size, args)
        return block.address


_BLOCKS = LaunchBlocks()


def launch_kernel(
    device: HipDevice, queue: HipQueue | None, kernel: HipKernel, args: Any, launch: KernelLaunchSizeArgs
) -> None:
    """The ``launch_kernel`` hook itself (``AMDGPUBackend`` binds it: the hot path has no glue
    frame). ``args`` holds at least the kernel's parameter extent (the core checked it: hookspecs'
    ``launch_kernel``); ``queue`` None: on the null stream of the device made current, waited for."""
    if args is not None and type(args) is not bytes:
        args = bytes(args)  # any bytes-like object: its bytes (len() of a memoryview counts items)
    extent = kernel.param_bytes
    extra = _BLOCKS.pack(args, extent) if extent else None
    gx, gy, gz = launch.num_groups
    bx, by, bz = launch.group_size
    if queue is not None:
        status = device.module_launch(
            kernel.function, gx, gy, gz, bx, by, bz, launch.dyn_shared_memory, queue.stream, None, extra
        )[0]
        if status:
            raise_for(device.hip, status, "hipModuleLaunchKernel")
        return
    device.activate()  # the null stream is the current device's
    status = device.module_launch(kernel.function, gx, gy, gz, bx, by, bz, launch.dyn_shared_memory, None, None, extra)[0]
    if status:
        raise_for(device.hip, status, "hipModuleLaunchKernel")
    check(device.hip, device.hip.hipStreamSynchronize(None), "hipStreamSynchronize (after hipModuleLaunchKernel)")
