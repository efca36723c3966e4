"""Loaded programs (HIP modules) and their kernels, with the launch argument packing.

A launch passes the packed argument buffer through ``hipModuleLaunchKernel``'s ``extra``
array (``HIP_LAUNCH_PARAM_BUFFER_POINTER``, ``..._SIZE``, ``..._END`` = 1, 2, 3); HIP copies
it before the call returns and appends the hidden arguments itself. The array, the size word
and a copy of the arguments lie in one block per thread, reused from launch to launch.
"""

from __future__ import annotations

import ctypes
import struct
from threading import get_ident
from typing import Any

from offload import ErrorCode, OffloadError

from ._code_object import CodeObject, KernelInfo

__all__ = ["HipImage", "HipKernel", "LaunchBlocks", "short_args_error"]

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
        """Copy ``args`` (``size`` bytes) into this thread's block; return the ``extra`` address."""
        ident = get_ident()
        block = self._blocks.get(ident)
        if block is None or size > block.capacity:
            block = self._blocks[ident] = LaunchBlock(max(256, 2 * size))
        (_packers.get(size) or _packer(size)).pack_into(block.buffer, 40, size, args)
        return block.address
