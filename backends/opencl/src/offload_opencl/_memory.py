"""SVM allocations as the ``void *`` addresses: coarse-grained buffers for DEVICE memory,
fine-grained buffers for HOST and MANAGED (host-readable) memory; copies and fills are SVM
commands on raw addresses (``at``)."""

from __future__ import annotations

import ctypes
from typing import Any

from offload import AllocType, ErrorCode, OffloadError

from . import _cl as cl
from ._device import OpenCLDevice
from ._errors import driver

__all__ = ["alloc", "at", "copy", "fill", "free"]

#: cl_svm_mem_flags (CL/cl.h): CL_MEM_READ_WRITE, CL_MEM_SVM_FINE_GRAIN_BUFFER
_RW = 1 << 0
_FINE = 1 << 10
#: clEnqueueSVMMemFill takes patterns of these sizes, at an address aligned to the size
_FILL_SIZES = frozenset({1, 2, 4, 8, 16, 32, 64, 128})


def at(address: int, size: int) -> cl.SVM:
    """The SVM pointer ``address`` (``size`` bytes from it) as PyOpenCL takes it."""
    return cl.SVM((ctypes.c_char * size).from_address(address))


def alloc(device: OpenCLDevice, alloc_type: AllocType, size: int) -> int:
    if alloc_type is not AllocType.DEVICE and not device.fine_grained:
        raise OffloadError(ErrorCode.UNSUPPORTED, f"{device!r} has no fine-grained buffer SVM for {alloc_type.name} memory")
    flags = _RW if alloc_type is AllocType.DEVICE else _RW | _FINE
    with driver(f"clSVMAlloc of {size} bytes ({alloc_type.name}) on {device!r}"):
        allocation = cl.SVMAllocation(device.context, size, 0, flags)
    address = int(allocation.svm_ptr)
    if not address:
        raise OffloadError(ErrorCode.OUT_OF_RESOURCES, f"clSVMAlloc of {size} bytes on {device!r} returned NULL")
    with device.lock:
        device.allocations[address] = allocation
    return address


def free(device: OpenCLDevice, address: int) -> None:
    with device.lock:
        allocation = device.allocations.pop(address)
    with driver(f"clSVMFree of {address:#x}"):
        allocation.release()


def copy(queue: cl.CommandQueue, dst: int, src: int, size: int, blocking: bool) -> cl.Event:
    """``clEnqueueSVMMemcpy`` between two raw addresses (SVM or host memory)."""
    with driver(f"clEnqueueSVMMemcpy of {size} bytes {src:#x} -> {dst:#x}"):
        return cl.enqueue_copy(queue, at(dst, size), at(src, size), byte_count=size, is_blocking=blocking)


def fill(queue: cl.CommandQueue, address: int, pattern: bytes, size: int, keep: list[Any]) -> cl.Event:
    """``clEnqueueSVMMemFill`` where OpenCL takes the pattern (a power-of-two size up to 128 at an
    address aligned to it); any other pattern is expanded on the host and copied (the expanded
    bytes are appended to ``keep``, to live until the copy is done)."""
    if len(pattern) in _FILL_SIZES and address % len(pattern) == 0:
        with driver(f"clEnqueueSVMMemFill of {size} bytes at {address:#x}"):
            return cl.enqueue_svm_memfill(queue, at(address, size), memoryview(pattern).cast("B"), byte_count=size)
    expanded = ctypes.create_string_buffer(pattern * (size // len(pattern)), size)
    keep.append(expanded)
    return copy(queue, address, ctypes.addressof(expanded), size, blocking=False)
