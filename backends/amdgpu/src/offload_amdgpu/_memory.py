"""Memory: allocation (DEVICE ``hipMalloc``, HOST ``hipHostMalloc``, MANAGED ``hipMallocManaged``),
registration (``hipHostRegister`` and HIP's device pointer of the range), copies (on the queue's
stream, or on the null stream and waited for), peer access (asked once per device pair) and fills
(1, 2 and 4-byte patterns natively where HIP allows; any other as strided byte fills).

``stream`` is the queue's stream, or None for a synchronous operation: it then runs on the null
stream of the device made current, and ``finish`` waits for it.
"""

from __future__ import annotations

import logging
from typing import Any

from offload import AllocType

from ._device import HipDevice, check, select
from ._errors import raise_hip_error

__all__ = ["alloc", "copy", "exchange", "fill", "finish", "free", "peer_access", "register", "unregister"]

log = logging.getLogger("offload_amdgpu")

HIP_HOST_MALLOC_DEFAULT = 0
HIP_MEM_ATTACH_GLOBAL = 1
HIP_HOST_REGISTER_DEFAULT = 0
HIP_MEMCPY_DEFAULT = 4
HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704

Peers = dict[tuple[int, int], bool]  # (from, to) ordinals -> peer access enabled


def finish(hip: Any, name: str, status: Any, stream: Any) -> None:
    """Check a call's status; for a synchronous one (``stream`` None), wait for the null stream."""
    if status:
        raise_hip_error(hip, name, status)
    if stream is None:
        status = hip.hipStreamSynchronize(None)[0]
        if status:
            raise_hip_error(hip, f"hipStreamSynchronize (after {name})", status)


def alloc(hip: Any, device: HipDevice, alloc_type: AllocType, size: int) -> int:
    select(hip, device)
    if alloc_type is AllocType.DEVICE:
        return int(check(hip, "hipMalloc", hip.hipMalloc(size)))
    if alloc_type is AllocType.HOST:
        return int(check(hip, "hipHostMalloc", hip.hipHostMalloc(size, HIP_HOST_MALLOC_DEFAULT)))
    return int(check(hip, "hipMallocManaged", hip.hipMallocManaged(size, HIP_MEM_ATTACH_GLOBAL)))


def free(hip: Any, device: HipDevice, address: int, alloc_type: AllocType) -> None:
    select(hip, device)
    if alloc_type is AllocType.HOST:
        check(hip, "hipHostFree", hip.hipHostFree(address))
    else:
        check(hip, "hipFree", hip.hipFree(address))


def register(hip: Any, device: HipDevice, address: int, size: int) -> int:
    """hipHostRegister, then the range's device pointer (hipHostRegister: "the mapped device
    pointer will have a different value than the mapped host pointer")."""
    select(hip, device)
    check(hip, "hipHostRegister", hip.hipHostRegister(address, size, HIP_HOST_REGISTER_DEFAULT))
    result = hip.hipHostGetDevicePointer(address, 0)
    if result[0]:
        hip.hipHostUnregister(address)
        raise_hip_error(hip, "hipHostGetDevicePointer", result[0])
    return int(result[1])


def unregister(hip: Any, device: HipDevice, address: int) -> None:
    select(hip, device)
    check(hip, "hipHostUnregister", hip.hipHostUnregister(address))


def copy(hip: Any, device: HipDevice, name: str, dst: int, src: int, size: int, stream: Any) -> None:
    """Host to device or back: ``name`` is hipMemcpyHtoDAsync or hipMemcpyDtoHAsync."""
    if stream is None:
        select(hip, device)
    finish(hip, name, getattr(hip, name)(dst, src, size, stream)[0], stream)


def exchange(
    hip: Any, peers: Peers, src_device: HipDevice, src: int, dst_device: HipDevice, dst: int, size: int, stream: Any
) -> None:
    """Device to device: hipMemcpyAsync on one device, hipMemcpyPeerAsync between two (which
    works with or without peer access, so access is only asked for, once per pair)."""
    if stream is None:
        select(hip, src_device)
    if src_device is dst_device:
        name = "hipMemcpyAsync"
        status = hip.hipMemcpyAsync(dst, src, size, hip.hipMemcpyKind(HIP_MEMCPY_DEFAULT), stream)[0]
    else:
        peer_access(hip, peers, src_device, dst_device)
        name = "hipMemcpyPeerAsync"
        status = hip.hipMemcpyPeerAsync(dst, dst_device.ordinal, src, src_device.ordinal, size, stream)[0]
    finish(hip, name, status, stream)


def peer_access(hip: Any, peers: Peers, src_device: HipDevice, dst_device: HipDevice) -> bool:
    """Whether ``src_device`` reaches ``dst_device``'s memory: asked once per pair
    (hipDeviceCanAccessPeer, then hipDeviceEnablePeerAccess with ``src_device`` current). Without
    it hipMemcpyPeer(Async) still copies ("the hipMemcpy will still work, but will perform the copy
    using a staging buffer on the host"), so a refusal is remembered and logged, not raised."""
    key = (src_device.ordinal, dst_device.ordinal)
    enabled = peers.get(key)
    if enabled is not None:
        return enabled
    can = check(hip, "hipDeviceCanAccessPeer", hip.hipDeviceCanAccessPeer(src_device.ordinal, dst_device.ordinal))
    enabled = False
    if can:
        check(hip, "hipSetDevice", hip.hipSetDevice(src_device.ordinal))
        status = int(hip.hipDeviceEnablePeerAccess(dst_device.ordinal, 0)[0])
        enabled = status in (0, HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        if not enabled:
            log.info("offload-amdgpu: peer access %d -> %d not enabled (hipError %d); peer copies are staged",
                     *key, status)  # fmt: skip
    peers[key] = enabled  # two threads racing both ask: HIP answers the second "already enabled"
    return enabled


def fill(hip: Any, device: HipDevice, address: int, pattern: bytes, size: int, stream: Any) -> None:
    """``size`` bytes of the repeated ``pattern``. hipMemsetD16 / D32 need a destination aligned to
    the element (HIP refuses others); olMemFill does not, so such a fill goes bytewise."""
    if stream is None:
        select(hip, device)
    width = len(pattern)
    value = int.from_bytes(pattern, "little")
    if width == 1:
        name, status = "hipMemsetD8Async", hip.hipMemsetD8Async(address, value, size, stream)[0]
    elif width == 2 and address % 2 == 0:
        name, status = "hipMemsetD16Async", hip.hipMemsetD16Async(address, value, size // 2, stream)[0]
    elif width == 4 and address % 4 == 0:  # hipMemsetD32Async takes an int
        value -= (value & 0x80000000) << 1
        name, status = "hipMemsetD32Async", hip.hipMemsetD32Async(address, value, size // 4, stream)[0]
    else:
        name, status = "hipMemset2DAsync", 0
        for index, byte in enumerate(pattern):  # column `index` of a (size / width) x width matrix
            status = hip.hipMemset2DAsync(address + index, width, byte, 1, size // width, stream)[0]
            if status:
                break
    finish(hip, name, status, stream)
