"""Loaded programs (HIP modules) and their kernels, with the launch argument packing.

A launch passes the packed argument buffer through ``hipModuleLaunchKernel``'s ``extra``
array (``HIP_LAUNCH_PARAM_BUFFER_POINTER``, ``..._SIZE``, ``..._END`` = 1, 2, 3); HIP copies
it before the call returns and appends the hidden arguments itself. The array and a scratch
copy of the arguments are per thread, reused from launch to launch.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from offload import ErrorCode, OffloadError

from ._code_object import CodeObject, KernelInfo

__all__ = ["HipImage", "HipKernel", "LaunchScratch", "short_args_error"]

HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
HIP_LAUNCH_PARAM_END = 3


class HipImage:
    """A loaded module and the code object it came from."""

    __slots__ = ("module", "code")

    def __init__(self, module: Any, code: CodeObject) -> None:
        self.module = module
        self.code = code


class HipKernel:
    """A kernel function handle with its metadata (explicit arguments, limits)."""

    __slots__ = ("function", "info", "explicit_size")

    def __init__(self, function: Any, info: KernelInfo) -> None:
        self.function = function
        self.info = info
        self.explicit_size = info.explicit_size

    def __repr__(self) -> str:
        return f"<HipKernel {self.info.name} args={self.explicit_size}B>"


def short_args_error(kernel: HipKernel, size: int) -> OffloadError:
    """The error for an argument buffer shorter than the kernel's explicit arguments."""
    return OffloadError(
        ErrorCode.INVALID_ARGUMENT,
        f"kernel {kernel.info.name!r} takes {kernel.explicit_size} bytes of arguments "
        f"({len(kernel.info.params)} parameters) but the argument buffer has {size} bytes",
    )


class LaunchScratch(threading.local):
    """This thread's ``extra`` array, its size word and an argument copy (grown on demand)."""

    def __init__(self) -> None:
        self.size = ctypes.c_size_t(0)
        self.capacity = 256
        self.buffer = ctypes.create_string_buffer(self.capacity)
        self.extra = (ctypes.c_void_p * 5)(
            HIP_LAUNCH_PARAM_BUFFER_POINTER,
            ctypes.addressof(self.buffer),
            HIP_LAUNCH_PARAM_BUFFER_SIZE,
            ctypes.addressof(self.size),
            HIP_LAUNCH_PARAM_END,
        )
        self.address = ctypes.addressof(self.extra)

    def pack(self, args: Any, size: int) -> int:
        """Copy ``args`` into the scratch buffer; return the address of the ``extra`` array."""
        if size > self.capacity:
            self.capacity = max(size, 2 * self.capacity)
            self.buffer = ctypes.create_string_buffer(self.capacity)
            self.extra[1] = ctypes.addressof(self.buffer)
        ctypes.memmove(self.buffer, args, size)
        self.size.value = size
        return self.address
