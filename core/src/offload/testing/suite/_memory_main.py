"""liboffload main's memory functions (unittests/OffloadAPI/memory): olMemAllocHost,
olMemAllocAligned(Host), olMemPrefetch; and olMemcpyRect and olMemIsAccessible (open upstream)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import Base, raises, require

A = ol.AllocType
def _is_host(device: Any) -> bool:
    platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
    return bool(ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST)


_ALIGNMENTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


class TestMemAllocHost(Base):
    def test_success(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "host_memory")
        address = ol.olMemAllocHost(device, 1024)
        try:
            assert ol.olGetMemInfo(address, ol.MemInfo.TYPE) is A.HOST
            assert ol.olGetMemInfo(address, ol.MemInfo.SIZE) == 1024
            ctypes.memset(address, 0x5A, 1024)  # host memory: the host writes it directly
            assert ctypes.string_at(address, 1024) == b"\x5a" * 1024
        finally:
            ol.olMemFree(address)

    def test_zero_size(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemAllocHost(device, 0)


def _aligned_or_unsupported(capabilities: Any, alignment: int, fn: Callable[..., int], *args: Any) -> int | None:
    """The aligned allocation, or None where a backend without ``mem_alloc_aligned`` cannot give
    the alignment (it must answer UNSUPPORTED naming the alignment)."""
    try:
        return fn(*args)
    except ol.OffloadError as exc:
        assert exc.code is ol.ErrorCode.UNSUPPORTED and not capabilities.aligned_alloc, exc
        assert str(alignment) in exc.details, exc
        return None


class TestMemAllocAligned(Base):
    @pytest.fixture(autouse=True)
    def _needs_memory(self, capabilities: Any) -> None:
        require(capabilities, "memory")

    @pytest.mark.parametrize("alignment", _ALIGNMENTS)
    def test_success(self, device: Any, capabilities: Any, alignment: int) -> None:
        address = _aligned_or_unsupported(capabilities, alignment, ol.olMemAllocAligned, device, A.DEVICE, 1024, alignment)
        if address is None:
            return
        try:
            assert address % alignment == 0
            assert ol.olGetMemInfo(address, ol.MemInfo.SIZE) == 1024
        finally:
            ol.olMemFree(address)

    def test_host_success(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "host_memory")
        address = _aligned_or_unsupported(capabilities, 64, ol.olMemAllocAlignedHost, device, 100, 64)
        if address is None:
            return
        try:
            assert address % 64 == 0 and ol.olGetMemInfo(address, ol.MemInfo.TYPE) is A.HOST
        finally:
            ol.olMemFree(address)

    @pytest.mark.parametrize("alignment", [0, 3, 96])
    def test_invalid_alignment(self, device: Any, alignment: int) -> None:
        with raises(ol.ErrorCode.INVALID_ARGUMENT):
            ol.olMemAllocAligned(device, A.DEVICE, 1024, alignment)

    def test_zero_size(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemAllocAligned(device, A.DEVICE, 0, 64)


class TestMemPrefetch(Base):
    @pytest.mark.parametrize(
        "flags", [ol.MemMigrationFlag.HOST_TO_DEVICE, ol.MemMigrationFlag.DEVICE_TO_HOST], ids=lambda f: f.name
    )
    def test_success(self, queue: Any, alloc: Callable[..., int], flags: Any) -> None:
        address = alloc(4096)
        ctypes.memset(address, 7, 4096)
        ol.olMemPrefetch(queue, [address, address + 1024], [1024, 2048], flags)
        ol.olSyncQueue(queue)
        assert ctypes.string_at(address, 4096) == b"\x07" * 4096  # a hint: the data is unchanged

    def test_count_zero(self, queue: Any) -> None:
        ol.olMemPrefetch(queue, [], [], ol.MemMigrationFlag.HOST_TO_DEVICE)
        ol.olMemPrefetch(queue, None, None, ol.MemMigrationFlag.HOST_TO_DEVICE)

    def test_invalid_flags(self, queue: Any, alloc: Callable[..., int]) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olMemPrefetch(queue, [alloc(64)], [64], 4)

    def test_sizes_null(self, queue: Any, alloc: Callable[..., int]) -> None:
        with raises(ol.ErrorCode.INVALID_NULL_POINTER):
            ol.olMemPrefetch(queue, [alloc(64)], None, ol.MemMigrationFlag.HOST_TO_DEVICE)

    def test_outside_allocation(self, queue: Any, alloc: Callable[..., int]) -> None:
        address = alloc(64)
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemPrefetch(queue, [address], [65], ol.MemMigrationFlag.HOST_TO_DEVICE)


def _pitched(rows: int, pitch: int, seed: int) -> bytes:
    return bytes((seed + i * 7) % 251 for i in range(rows * pitch))


def _region(data: bytes, pitch: int, slab: int, offset: tuple[int, int, int], extent: tuple[int, int, int]) -> list[bytes]:
    x, y, z = offset
    return [
        data[(z + k) * slab + (y + j) * pitch + x :][: extent[0]] for k in range(extent[2]) for j in range(extent[1])
    ]


class TestMemcpyRect(Base):
    @pytest.fixture(autouse=True)
    def _needs_copies(self, capabilities: Any) -> None:
        require(capabilities, "memory")
        require(capabilities, "copies")

    @pytest.mark.parametrize("queued", [False, True], ids=["sync", "queue"])
    @pytest.mark.parametrize("depth", [1, 3], ids=["2d", "3d"])
    def test_round_trip(self, device: Any, host_device: Any, capabilities: Any, request: Any, queued: bool, depth: int) -> None:
        queue = request.getfixturevalue("queue") if queued else None
        src_pitch, src_rows = 24, 6
        dev_pitch, dev_rows = 40, 8
        extent = (10, 4, depth)
        src_slab, dev_slab = src_pitch * src_rows, dev_pitch * dev_rows
        src = (ctypes.c_uint8 * (src_slab * 4)).from_buffer_copy(_pitched(src_rows * 4, src_pitch, 3))
        device_buffer = ol.olMemAlloc(device, A.DEVICE, dev_slab * 4)
        back = (ctypes.c_uint8 * (dev_slab * 4))()
        try:
            zero = (ctypes.c_uint8 * (dev_slab * 4))()
            ol.olMemcpy(None, device_buffer, device, ctypes.addressof(zero), host_device, dev_slab * 4)
            src_rect = ol.Rect(ctypes.addressof(src), host_device, (5, 1, 0), src_pitch, src_slab)
            dev_rect = ol.Rect(device_buffer, device, (8, 2, 1), dev_pitch, dev_slab)
            ol.olMemcpyRect(queue, dev_rect, src_rect, extent)
            if queue is not None:
                ol.olSyncQueue(queue)
            ol.olMemcpy(None, ctypes.addressof(back), host_device, device_buffer, device, dev_slab * 4)
            got = bytes(back)
            assert _region(got, dev_pitch, dev_slab, (8, 2, 1), extent) == _region(bytes(src), src_pitch, src_slab, (5, 1, 0), extent)
            written = sum(extent[0] for _ in range(extent[1] * extent[2]))
            assert sum(1 for b in got if b) <= written, "olMemcpyRect wrote outside the region"
        finally:
            ol.olMemFree(device_buffer)

    def test_within_one_device(self, device: Any, host_device: Any) -> None:
        """Both regions in one allocation of the device; the source's slice pitch (130) is no
        multiple of its row pitch (24), as olMemcpyRect allows."""
        src_pitch, src_slab, dst_pitch, dst_slab = 24, 130, 32, 192
        extent = (12, 5, 3)
        size = 4 * 192 + 3 * 130
        data = bytes((i * 7 + 1) % 251 or 1 for i in range(3 * 130))
        memory = ol.olMemAlloc(device, A.DEVICE, size)
        back = (ctypes.c_uint8 * size)()
        try:
            zero = (ctypes.c_uint8 * size)()
            ol.olMemcpy(None, memory, device, ctypes.addressof(zero), host_device, size)
            staged = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
            ol.olMemcpy(None, memory + 4 * 192, device, ctypes.addressof(staged), host_device, len(data))
            ol.olMemcpyRect(
                None,
                ol.Rect(memory, device, (3, 0, 1), dst_pitch, dst_slab),
                ol.Rect(memory + 4 * 192, device, (2, 0, 0), src_pitch, src_slab),
                extent,
            )
            ol.olMemcpy(None, ctypes.addressof(back), host_device, memory, device, size)
        finally:
            ol.olMemFree(memory)
        got = bytes(back)
        assert _region(got, dst_pitch, dst_slab, (3, 0, 1), extent) == _region(data, src_pitch, src_slab, (2, 0, 0), extent)
        assert sum(1 for b in got[: 4 * 192] if b) == 12 * 5 * 3, "olMemcpyRect wrote outside the region"

    def test_pitch_too_small(self, device: Any, host_device: Any) -> None:
        _rect_to_device_refused(device, host_device, (1024, 8, 64), (1024, 16, 64), (16, 2, 1))

    def test_region_outside_allocation(self, device: Any, host_device: Any) -> None:
        # the 5th row of the device side overruns
        _rect_to_device_refused(device, host_device, (256, 64, 4096), (4096, 64, 4096), (64, 5, 1))


_Triple = tuple[int, int, int]


def _rect_to_device_refused(device: Any, host_device: Any, device_side: _Triple, host_side: _Triple, extent: _Triple) -> None:
    """olMemcpyRect of ``extent`` from a zeroed host buffer into a fresh device allocation is
    ``OL_ERRC_INVALID_SIZE``; each side is (bytes, row pitch, slice pitch), its region at (0, 0, 0)."""
    allocated, *device_pitches = device_side
    host_bytes, *host_pitches = host_side
    device_buffer = ol.olMemAlloc(device, A.DEVICE, allocated)
    src = (ctypes.c_uint8 * host_bytes)()
    try:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemcpyRect(
                None,
                ol.Rect(device_buffer, device, (0, 0, 0), *device_pitches),
                ol.Rect(ctypes.addressof(src), host_device, (0, 0, 0), *host_pitches),
                extent,
            )
    finally:
        ol.olMemFree(device_buffer)


class TestMemIsAccessible(Base):
    def test_own_allocation(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "memory")
        address = ol.olMemAlloc(device, A.DEVICE, 256)
        try:
            assert ol.olMemIsAccessible(device, address, 256) is True
            assert ol.olMemIsAccessible(device, address + 255, 1) is True
            assert ol.olMemIsAccessible(device, address, 257) is False
        finally:
            ol.olMemFree(address)

    def test_host_device_and_device_memory(self, device: Any, host_device: Any, capabilities: Any) -> None:
        require(capabilities, "memory")
        if device is host_device:
            pytest.skip("the device is the host device")
        address = ol.olMemAlloc(device, A.DEVICE, 256)
        try:
            assert ol.olMemIsAccessible(host_device, address, 256) is _is_host(device)
        finally:
            ol.olMemFree(address)

    def test_unknown_memory(self, device: Any) -> None:
        buffer = (ctypes.c_uint8 * 64)()
        expected = _is_host(device)  # the host device reaches any mapped host memory
        assert ol.olMemIsAccessible(device, ctypes.addressof(buffer), 64) is expected

    def test_zero_size(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemIsAccessible(device, 4096, 0)
