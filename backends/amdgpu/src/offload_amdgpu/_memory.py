"""Memory: allocation (DEVICE ``hipMalloc``, HOST ``hipHostMalloc``, MANAGED ``hipMallocManaged``),
registration (``hipHostRegister`` and HIP's device pointer of the range), copies in every
direction (on the queue's stream, or on the null stream and waited for), peer access (asked once
per device pair) and fills (1, 2 and 4-byte patterns natively where HIP allows; any other as
strided byte fills).

``stream`` is the queue's stream, or None for a synchronous operation: it then runs on the null
stream of the device made current, and ``_finish`` waits for it (the work is complete on return,
as hookspecs promises).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from offload import AllocType

from ._device import HipDevice
from ._driver import check
from ._errors import raise_for
from ._queue import HipQueue

__all__ = [
    "alloc", "alloc_async", "copy_between", "copy_rect", "data_retrieve", "data_submit", "fill", "free", "free_async", "register",
    "unregister",
]  # fmt: skip

log = logging.getLogger("offload_amdgpu")

HIP_HOST_MALLOC_DEFAULT = 0
HIP_MEM_ATTACH_GLOBAL = 1
HIP_HOST_REGISTER_DEFAULT = 0
HIP_MEMCPY_DEFAULT = 4
HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704


def _finish(device: HipDevice, call: str, status: Any, stream: Any) -> None:
    """Check a call's status; for a synchronous one (``stream`` None), wait for the null stream."""
    hip = device.hip
    if status:
        raise_for(hip, status, call)
    if stream is None:
        status = hip.hipStreamSynchronize(None)[0]
        if status:
            raise_for(hip, status, f"hipStreamSynchronize (after {call})")


def alloc(device: HipDevice, alloc_type: AllocType, size: int) -> int:
    hip = device.hip
    device.activate()
    if alloc_type is AllocType.DEVICE:
        return int(check(hip, hip.hipMalloc(size), "hipMalloc"))
    if alloc_type is AllocType.HOST:
        return int(check(hip, hip.hipHostMalloc(size, HIP_HOST_MALLOC_DEFAULT), "hipHostMalloc"))
    return int(check(hip, hip.hipMallocManaged(size, HIP_MEM_ATTACH_GLOBAL), "hipMallocManaged"))


def free(device: HipDevice, address: int, alloc_type: AllocType) -> None:
    hip = device.hip
    device.activate()
    if alloc_type is AllocType.HOST:
        check(hip, hip.hipHostFree(address), "hipHostFree")
    else:
        check(hip, hip.hipFree(address), "hipFree")


def alloc_async(device: HipDevice, stream: Any, size: int) -> int:
    """Device memory in the stream's order (``hipMallocAsync``, from the device's current pool)."""
    hip = device.hip
    device.activate()
    return int(check(hip, hip.hipMallocAsync(size, stream), "hipMallocAsync"))


def free_async(device: HipDevice, stream: Any, address: int) -> None:
    """Free in the stream's order (``hipFreeAsync``: once the stream reaches it)."""
    hip = device.hip
    device.activate()
    check(hip, hip.hipFreeAsync(address, stream), "hipFreeAsync")


def register(device: HipDevice, address: int, size: int) -> int:
    """hipHostRegister, then the range's device pointer (hipHostRegister: "the mapped device
    pointer will have a different value than the mapped host pointer")."""
    hip = device.hip
    device.activate()
    check(hip, hip.hipHostRegister(address, size, HIP_HOST_REGISTER_DEFAULT), "hipHostRegister")
    result = hip.hipHostGetDevicePointer(address, 0)
    if result[0]:
        hip.hipHostUnregister(address)
        raise_for(hip, result[0], "hipHostGetDevicePointer")
    return int(result[1])


def unregister(device: HipDevice, address: int) -> None:
    hip = device.hip
    device.activate()
    check(hip, hip.hipHostUnregister(address), "hipHostUnregister")


def _copy_hook(call: str) -> Callable[[HipDevice, int, int, int, HipQueue | None], None]:
    """The ``data_submit`` or ``data_retrieve`` hook itself over HIP's ``call`` (``AMDGPUBackend``
    binds it: the hot path has no glue frame)."""

    def copy(device: HipDevice, dst: int, src: int, size: int, queue: HipQueue | None) -> None:
        copy_async = getattr(device.hip, call)
        if queue is not None:  # the hot path: one HIP call
            status = copy_async(dst, src, size, queue.stream)[0]
            if status:
                raise_for(device.hip, status, call)
            return
        device.activate()
        _finish(device, call, copy_async(dst, src, size, None)[0], None)

    return copy


data_submit = _copy_hook("hipMemcpyHtoDAsync")
data_retrieve = _copy_hook("hipMemcpyDtoHAsync")


def copy_rect(
    device: HipDevice, dst: int, dst_pitches: tuple[int, int], src: int, src_pitches: tuple[int, int],
    extent: tuple[int, int, int], stream: Any,
) -> None:
    """A pitched 2-D/3-D copy through ``hipMemcpy3DAsync`` (hipMemcpy3DParms, hipMemcpyDefault:
    the runtime tells host from device memory by the pointer). A slice pitch is given as a height
    in rows (hipPitchedPtr.ysize): where one is not a multiple of its row pitch, each slice is
    its own 2-D copy, in stream order."""
    hip = device.hip
    width, height, depth = extent
    (dst_row, dst_slab), (src_row, src_slab) = dst_pitches, src_pitches
    whole = depth == 1 or (dst_slab % dst_row == 0 and src_slab % src_row == 0)
    device.activate()
    for z in range(1 if whole else depth):
        params = hip.hipMemcpy3DParms()
        for side, address, row, slab in ((params.srcPtr, src, src_row, src_slab), (params.dstPtr, dst, dst_row, dst_slab)):
            side.ptr, side.pitch, side.xsize = address + z * slab, row, width
            side.ysize = slab // row if whole and depth > 1 else height
        params.extent.width, params.extent.height, params.extent.depth = width, height, depth if whole else 1
        params.kind = hip.hipMemcpyKind(HIP_MEMCPY_DEFAULT)
        status = hip.hipMemcpy3DAsync(params, stream)[0]
        if status:
            raise_for(hip, status, "hipMemcpy3DAsync")
    _finish(device, "hipMemcpy3DAsync", 0, stream)


def copy_between(src_device: HipDevice, src: int, dst_device: HipDevice, dst: int, size: int, stream: Any) -> None:
    """Device to device: hipMemcpyAsync on one device, hipMemcpyPeerAsync between two (which
    works with or without peer access, so access is only asked for, once per pair)."""
    hip = src_device.hip
    if stream is None:
        src_device.activate()
    if src_device is dst_device:
        call = "hipMemcpyAsync"
        status = hip.hipMemcpyAsync(dst, src, size, hip.hipMemcpyKind(HIP_MEMCPY_DEFAULT), stream)[0]
    else:
        _enable_peer(src_device, dst_device)
        call = "hipMemcpyPeerAsync"
        status = hip.hipMemcpyPeerAsync(dst, dst_device.ordinal, src, src_device.ordinal, size, stream)[0]
    _finish(src_device, call, status, stream)


def _enable_peer(src_device: HipDevice, dst_device: HipDevice) -> bool:
    """Whether ``src_device`` reaches ``dst_device``'s memory: asked once per pair
    (hipDeviceCanAccessPeer, then hipDeviceEnablePeerAccess with ``src_device`` current). Without
    it hipMemcpyPeer(Async) still copies ("the hipMemcpy will still work, but will perform the copy
    using a staging buffer on the host"), so a refusal is remembered and logged, not raised."""
    hip = src_device.hip
    enabled = src_device.peers.get(dst_device.ordinal)
    if enabled is not None:
        return enabled
    can = check(hip, hip.hipDeviceCanAccessPeer(src_device.ordinal, dst_device.ordinal), "hipDeviceCanAccessPeer")
    enabled = False
    if can:
        check(hip, hip.hipSetDevice(src_device.ordinal), "hipSetDevice")
        status = int(hip.hipDeviceEnablePeerAccess(dst_device.ordinal, 0)[0])
        enabled = status in (0, HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        if not enabled:
            log.info("offload-amdgpu: peer access %d -> %d not enabled (hipError %d); peer copies are staged",
                     src_device.ordinal, dst_device.ordinal, status)  # fmt: skip
    src_device.peers[dst_device.ordinal] = enabled  # two threads racing both ask: HIP answers "already enabled"
    return enabled


def fill(device: HipDevice, address: int, pattern: bytes, size: int, stream: Any) -> None:
    """``size`` bytes of the repeated ``pattern``. hipMemsetD16 / D32 need a destination aligned to
    the element (HIP refuses others); olMemFill does not, so such a fill goes bytewise."""
    hip = device.hip
    if stream is None:
        device.activate()
    width = len(pattern)
    value = int.from_bytes(pattern, "little")
    if width == 1:
        call, status = "hipMemsetD8Async", hip.hipMemsetD8Async(address, value, size, stream)[0]
    elif width == 2 and address % 2 == 0:
        call, status = "hipMemsetD16Async", hip.hipMemsetD16Async(address, value, size // 2, stream)[0]
    elif width == 4 and address % 4 == 0:  # hipMemsetD32Async takes an int
        value -= (value & 0x80000000) << 1
        call, status = "hipMemsetD32Async", hip.hipMemsetD32Async(address, value, size // 4, stream)[0]
    else:
        call, status = "hipMemset2DAsync", 0
        for index, byte in enumerate(pattern):  # column `index` of a (size / width) x width matrix
            status = hip.hipMemset2DAsync(address + index, width, byte, 1, size // width, stream)[0]
            if status:
                break
    _finish(device, call, status, stream)
