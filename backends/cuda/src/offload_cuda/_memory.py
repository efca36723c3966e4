"""Memory: allocation (DEVICE, HOST = pinned, MANAGED), registration (pinning user memory),
copies in every direction (async on the queue's stream, or synchronous without a queue), and
fills (1, 2 and 4-byte patterns natively; other sizes as strided 2-D fills, upstream's way).

Without a queue the work is complete on return, as hookspecs promises. CUDA's own "synchronous"
calls do not promise that ("API synchronization behavior": memsets to device memory and
device-to-device copies are asynchronous to the host, a copy from pageable memory returns once
the data is staged), so such work is enqueued on the legacy stream and that stream synchronised.
"""

from __future__ import annotations

from typing import Any

from offload import AllocType, ErrorCode, OffloadError

from ._device import CudaDevice
from ._driver import check

__all__ = ["alloc", "copy_between", "copy_from_device", "copy_rect", "copy_to_device", "fill", "free", "register", "unregister"]

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


def _finish(device: CudaDevice, stream: Any | None) -> None:
    """Without a queue: wait for the work just enqueued on the legacy stream."""
    if stream is None:
        d = device.driver
        check(d, d.cuStreamSynchronize(device.legacy), "cuStreamSynchronize")


def copy_to_device(device: CudaDevice, dst: int, src: int, size: int, stream: Any | None) -> None:
    d = device.driver
    device.activate()
    check(d, d.cuMemcpyHtoDAsync(dst, src, size, device.legacy if stream is None else stream), "cuMemcpyHtoDAsync")
    _finish(device, stream)


def copy_from_device(device: CudaDevice, dst: int, src: int, size: int, stream: Any | None) -> None:
    d = device.driver
    device.activate()
    check(d, d.cuMemcpyDtoHAsync(dst, src, size, device.legacy if stream is None else stream), "cuMemcpyDtoHAsync")
    _finish(device, stream)


def copy_rect(
    device: CudaDevice, dst: int, dst_pitches: tuple[int, int], src: int, src_pitches: tuple[int, int],
    extent: tuple[int, int, int], stream: Any | None,
) -> None:
    """A pitched 2-D/3-D copy through ``cuMemcpy3DAsync`` (CUDA_MEMCPY3D), both sides
    CU_MEMORYTYPE_UNIFIED (the driver tells host from device memory by the pointer). The driver
    takes a slice pitch as a height in rows (srcHeight/dstHeight): where one is not a multiple of
    its row pitch, each slice is its own 2-D copy, in stream order."""
    d = device.driver
    width, height, depth = extent
    (dst_row, dst_slab), (src_row, src_slab) = dst_pitches, src_pitches
    whole = depth == 1 or (dst_slab % dst_row == 0 and src_slab % src_row == 0)
    on = device.legacy if stream is None else stream
    device.activate()
    for z in range(1 if whole else depth):
        params = d.CUDA_MEMCPY3D()
        params.srcMemoryType = params.dstMemoryType = d.CUmemorytype.CU_MEMORYTYPE_UNIFIED
        params.srcDevice, params.srcPitch = src + z * src_slab, src_row
        params.dstDevice, params.dstPitch = dst + z * dst_slab, dst_row
        params.srcHeight = src_slab // src_row if whole and depth > 1 else height
        params.dstHeight = dst_slab // dst_row if whole and depth > 1 else height
        params.WidthInBytes, params.Height, params.Depth = width, height, depth if whole else 1
        check(d, d.cuMemcpy3DAsync(params, on), "cuMemcpy3DAsync")
    _finish(device, stream)


def _enable_peer(src: CudaDevice, dst: CudaDevice) -> bool:
    """Enable ``src``'s context to access ``dst``'s memory when the driver allows it, once per pair.

    Only an optimisation: ``cuMemcpyPeer`` needs no peer access, so a refusal (no P2P, too many
    peers) is remembered and the copy goes on without it.
    """
    if dst.ordinal in src.peers:
        return True
    if dst.ordinal in src.no_peers:
        return False
    d = src.driver
    result, can = d.cuDeviceCanAccessPeer(src.handle, dst.handle)
    if int(result) or not int(can):
        src.no_peers.add(dst.ordinal)
        return False
    src.activate()
    (result,) = d.cuCtxEnablePeerAccess(dst.context, 0)
    if int(result) not in (0, _CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED):
        src.no_peers.add(dst.ordinal)
        return False
    src.peers.add(dst.ordinal)
    return True


def copy_between(
    src_device: CudaDevice, src: int, dst_device: CudaDevice, dst: int, size: int, stream: Any | None
) -> None:
    """Within one GPU a device-to-device copy; across GPUs a peer copy."""
    d = src_device.driver
    on = src_device.legacy if stream is None else stream
    if src_device is dst_device:
        src_device.activate()
        check(d, d.cuMemcpyDtoDAsync(dst, src, size, on), "cuMemcpyDtoDAsync")
    else:
        _enable_peer(src_device, dst_device)
        src_device.activate()
        check(
            d, d.cuMemcpyPeerAsync(dst, dst_device.context, src, src_device.context, size, on), "cuMemcpyPeerAsync"
        )
    _finish(src_device, stream)


def fill(device: CudaDevice, address: int, pattern: bytes, size: int, stream: Any | None) -> None:
    d = device.driver
    device.activate()
    on = device.legacy if stream is None else stream
    n = len(pattern)
    if n == 1 or (n in (2, 4) and address % n == 0):
        value = int.from_bytes(pattern, "little")
        fn = {1: d.cuMemsetD8Async, 2: d.cuMemsetD16Async, 4: d.cuMemsetD32Async}[n]
        check(d, fn(address, value, size // n, on), f"cuMemsetD{n * 8}Async")
    else:
        # Any other pattern: one strided 2-D fill per element of the pattern (pitch = pattern size).
        element = 4 if n % 4 == 0 and address % 4 == 0 else 2 if n % 2 == 0 and address % 2 == 0 else 1
        rows = size // n
        queued = {1: d.cuMemsetD2D8Async, 2: d.cuMemsetD2D16Async, 4: d.cuMemsetD2D32Async}[element]
        for offset in range(0, n, element):
            value = int.from_bytes(pattern[offset : offset + element], "little")
            check(d, queued(address + offset, n, value, 1, rows, on), f"cuMemsetD2D{element * 8}Async")
    _finish(device, stream)
