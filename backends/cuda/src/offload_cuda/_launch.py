"""Kernel launches: the packed argument buffer through ``CU_LAUNCH_PARAM_BUFFER_*``.

The argument bytes are copied into a per-thread buffer the ``extra`` array points at; the driver
copies them at ``cuLaunchKernel``, so the buffer is free again when the call returns.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from offload import KernelLaunchSizeArgs

from ._device import CudaDevice
from ._errors import raise_for
from ._program import CudaKernel

__all__ = ["launch"]

_CU_LAUNCH_PARAM_BUFFER_POINTER = 1
_CU_LAUNCH_PARAM_BUFFER_SIZE = 2
_SCRATCH_BYTES = 4096


class _Scratch(threading.local):
    """The calling thread's argument buffer and ``extra`` array, and the ``bytes`` object whose
    contents it holds (immutable: the same object passed again needs no copy)."""

    def __init__(self) -> None:
        self.buffer = ctypes.create_string_buffer(_SCRATCH_BYTES)
        self.size = ctypes.c_size_t(0)
        self.extra = (ctypes.c_void_p * 5)(
            _CU_LAUNCH_PARAM_BUFFER_POINTER,
            ctypes.addressof(self.buffer),
            _CU_LAUNCH_PARAM_BUFFER_SIZE,
            ctypes.addressof(self.size),
            0,
        )
        self.buffer_address = ctypes.addressof(self.buffer)
        self.extra_address = ctypes.addressof(self.extra)
        self.held: Any = None  # the bytes object whose contents the buffer holds
        self.held_size = 0


_scratch = _Scratch()
_memmove = ctypes.memmove


def launch(
    device: CudaDevice, stream: Any, kernel: CudaKernel, args: Any, size: KernelLaunchSizeArgs, cooperative: bool = False
) -> None:
    """Enqueue ``kernel`` on ``stream``; ``cooperative``: through ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_COOPERATIVE``, every
    block co-resident (the driver refuses a grid too large with COOPERATIVE_LAUNCH_TOO_LARGE).

    The driver is given exactly the parameters' extent (last offset + size, from
    ``cuFuncGetParamInfo``) as ``CU_LAUNCH_PARAM_BUFFER_SIZE``: it refuses a longer size with
    ``CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES``, so a buffer's tail padding is never passed on (the
    same fix as llvm-project PR #172249 in liboffload). ``args`` holds at least that extent: the
    core checked it (hookspecs' ``launch_kernel``), so it is not checked again here.
    """
    n = kernel.param_bytes
    scratch = _scratch
    gx, gy, gz = size.num_groups
    bx, by, bz = size.group_size
    dynamic = size.dyn_shared_memory
    device.activate()  # cuFuncSetAttribute below needs the context current on this thread
    if dynamic > kernel.dynamic_shared_limit:
        kernel.allow_dynamic_shared(device, dynamic)
    extra: Any = 0
    keep: Any = None
    if n:
        if n <= _SCRATCH_BYTES:
            if args is not scratch.held:
                if type(args) is bytes:
                    _memmove(scratch.buffer_address, args, n)
                    scratch.held = args  # immutable: the same object again needs no copy
                else:
                    _memmove(scratch.buffer_address, bytes(args)[:n], n)
                    scratch.held = None
            if n != scratch.held_size:
                scratch.size.value = scratch.held_size = n
            extra = scratch.extra_address
        else:  # a large argument struct: its own buffer for this call
            scratch.held = None
            keep = ctypes.create_string_buffer(bytes(args)[:n], n)
            count = ctypes.c_size_t(n)
            array = (ctypes.c_void_p * 5)(1, ctypes.addressof(keep), 2, ctypes.addressof(count), 0)
            keep = (keep, count, array)
            extra = ctypes.addressof(array)
    d = device.driver
    if cooperative:
        (result,) = d.cuLaunchKernelEx(_cooperative_config(d, size, stream), kernel.function, 0, extra)
        if result:
            raise_for(d, result, f"cuLaunchKernelEx({kernel.name}, cooperative)")
        return
    (result,) = d.cuLaunchKernel(kernel.function, gx, gy, gz, bx, by, bz, dynamic, stream, 0, extra)
    if result:
        raise_for(d, result, f"cuLaunchKernel({kernel.name})")


def _cooperative_config(d: Any, size: KernelLaunchSizeArgs, stream: Any) -> Any:
    """A ``CUlaunchConfig`` of ``size``'s grid on ``stream`` with the cooperative attribute."""
    config = d.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = size.num_groups
    config.blockDimX, config.blockDimY, config.blockDimZ = size.group_size
    config.sharedMemBytes = size.dyn_shared_memory
    config.hStream = stream
    attribute = d.CUlaunchAttribute()
    attribute.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    attribute.value.cooperative = 1
    config.attrs = [attribute]
    config.numAttrs = 1
    return config
