"""Memory: allocation (DEVICE, HOST = pinned, MANAGED), registration (pinning user memory),
copies in every direction (async on the queue's stream, or synchronous without a queue), and
fills (1, 2 and 4-byte patterns natively; other sizes as strided 2-D fills, upstream's way)."""

from __future__ import annotations

from typing import Any

from offload import AllocType, ErrorCode, OffloadError

from ._device import CudaDevice
from ._driver import check

__all__ = ["alloc", "copy_between", "copy_from_device", "copy_to_device", "fill", "free", "register", "unregister"]

_CU_MEM_ATTACH_GLOBAL = 1
_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704


def alloc(device: CudaDevice, alloc_type: AllocType, size: int) -> int:
    d = device.driver
    device.activate()
    if alloc_type == AllocType.DEVICE:
        return int(check(d, d.cuMemAlloc(size), "cuMemAlloc"))
    if alloc_type == AllocType.HOST:
        return int(check(d, d.cuMemAllocHost(size), "cuMemAllocHost"))
    return int(check(d, d.cuMemAllocManaged(size, _CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged"))


def free(device: CudaDevice, address: int, alloc_type: AllocType) -> None:
    d = device.driver
    device.activate()
    if alloc_type == AllocType.HOST:
        check(d, d.cuMemFreeHost(address), "cuMemFreeHost")
    else:
        check(d, d.cuMemFree(address), "cuMemFree")


def register(device: CudaDevice, address: int, size: int) -> int:
    """Pin ``[address, address + size)`` (the core counts nested registrations)."""
    d = device.driver
    device.activate()
    check(d, d.cuMemHostRegister(address, size, 0), "cuMemHostRegister")
    return address


def unregister(device: CudaDevice, address: int) -> None:
    d = device.driver
    device.activate()
    check(d, d.cuMemHostUnregister(address), "cuMemHostUnregister")


def copy_to_device(device: CudaDevice, dst: int, src: int, size: int, stream: Any | None) -> None:
    d = device.driver
    device.activate()
    if stream is None:
        check(d, d.cuMemcpyHtoD(dst, src, size), "cuMemcpyHtoD")
    else:
        check(d, d.cuMemcpyHtoDAsync(dst, src, size, stream), "cuMemcpyHtoDAsync")


def copy_from_device(device: CudaDevice, dst: int, src: int, size: int, stream: Any | None) -> None:
    d = device.driver
    device.activate()
    if stream is None:
        check(d, d.cuMemcpyDtoH(dst, src, size), "cuMemcpyDtoH")
    else:
        check(d, d.cuMemcpyDtoHAsync(dst, src, size, stream), "cuMemcpyDtoHAsync")


def _enable_peer(src: CudaDevice, dst: CudaDevice) -> bool:
    """Enable ``src``'s context to access ``dst``'s memory when the driver allows it."""
    if dst.ordinal in src.peers:
        return True
    d = src.driver
    can = int(check(d, d.cuDeviceCanAccessPeer(src.handle, dst.handle), "cuDeviceCanAccessPeer"))
    if not can:
        return False
    src.activate()
    (result,) = d.cuCtxEnablePeerAccess(dst.context, 0)
    if int(result) not in (0, _CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED):
        check(d, (result,), "cuCtxEnablePeerAccess")
    src.peers.add(dst.ordinal)
    return True


def copy_between(
    src_device: CudaDevice, src: int, dst_device: CudaDevice, dst: int, size: int, stream: Any | None
) -> None:
    """Within one GPU a device-to-device copy; across GPUs a peer copy."""
    d = src_device.driver
    if src_device is dst_device:
        src_device.activate()
        if stream is None:
            check(d, d.cuMemcpyDtoD(dst, src, size), "cuMemcpyDtoD")
        else:
            check(d, d.cuMemcpyDtoDAsync(dst, src, size, stream), "cuMemcpyDtoDAsync")
        return
    _enable_peer(src_device, dst_device)
    src_device.activate()
    if stream is None:
        check(d, d.cuMemcpyPeer(dst, dst_device.context, src, src_device.context, size), "cuMemcpyPeer")
    else:
        check(
            d, d.cuMemcpyPeerAsync(dst, dst_device.context, src, src_device.context, size, stream), "cuMemcpyPeerAsync"
        )


def fill(device: CudaDevice, address: int, pattern: bytes, size: int, stream: Any | None) -> None:
    d = device.driver
    device.activate()
    n = len(pattern)
    if n == 1 or (n in (2, 4) and address % n == 0):
        value = int.from_bytes(pattern, "little")
        count = size // n
        bits = n * 8
        if stream is None:
            fn = {1: d.cuMemsetD8, 2: d.cuMemsetD16, 4: d.cuMemsetD32}[n]
            check(d, fn(address, value, count), f"cuMemsetD{bits}")
        else:
            fn = {1: d.cuMemsetD8Async, 2: d.cuMemsetD16Async, 4: d.cuMemsetD32Async}[n]
            check(d, fn(address, value, count, stream), f"cuMemsetD{bits}Async")
        return
    # Any other pattern: one strided 2-D fill per element of the pattern (pitch = pattern size).
    element = 4 if n % 4 == 0 and address % 4 == 0 else 2 if n % 2 == 0 and address % 2 == 0 else 1
    rows = size // n
    sync = {1: d.cuMemsetD2D8, 2: d.cuMemsetD2D16, 4: d.cuMemsetD2D32}[element]
    queued = {1: d.cuMemsetD2D8Async, 2: d.cuMemsetD2D16Async, 4: d.cuMemsetD2D32Async}[element]
    for offset in range(0, n, element):
        value = int.from_bytes(pattern[offset : offset + element], "little")
        if stream is None:
            check(d, sync(address + offset, n, value, 1, rows), f"cuMemsetD2D{element * 8}")
        else:
            check(d, queued(address + offset, n, value, 1, rows, stream), f"cuMemsetD2D{element * 8}Async")
