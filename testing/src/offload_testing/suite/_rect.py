"""olMemcpyRect (open upstream, llvm-project PR #160321: unittests/OffloadAPI/memory/olMemcpyRect.cpp):
the kit's own round trips, then upstream's cases one by one.

Upstream's early version has limits offload does not share (its PR lists them: AMDGPU only, CUDA
UNSUPPORTED; base addresses and pitches aligned to 4 bytes, as ``hsa_amd_memory_async_copy_rect``
needs; only memory liboffload allocated). offload copies through each driver's own rect copy where
one applies and row by row otherwise, on every backend, so those cases are ported with the
assertion offload makes instead, each saying so.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol

from ._helpers import NULL_HANDLE, NULL_POINTER, Base, raises, require

A = ol.AllocType


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
    def test_round_trip(
        self, device: Any, host_device: Any, capabilities: Any, request: Any, queued: bool, depth: int
    ) -> None:
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
        _expect_invalid_size(device, host_device, 1024, (8, 64), (16, 64), (16, 2, 1))

    def test_region_outside_allocation(self, device: Any, host_device: Any) -> None:
        """The 5th row of the device side overruns its 256-byte allocation."""
        _expect_invalid_size(device, host_device, 256, (64, 4096), (64, 4096), (64, 5, 1))


def _expect_invalid_size(
    device: Any, host: Any, size: int, dev_pitches: tuple[int, int], host_pitches: tuple[int, int], extent: tuple[int, int, int]
) -> None:
    """olMemcpyRect from a 4096-byte host buffer into a ``size``-byte device allocation, both at
    offset 0 with the given (row, slice) pitches: refused with INVALID_SIZE."""
    device_buffer = ol.olMemAlloc(device, A.DEVICE, size)
    src = (ctypes.c_uint8 * 4096)()
    try:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemcpyRect(
                None,
                ol.Rect(device_buffer, device, (0, 0, 0), *dev_pitches),
                ol.Rect(ctypes.addressof(src), host, (0, 0, 0), *host_pitches),
                extent,
            )
    finally:
        ol.olMemFree(device_buffer)


#: Upstream's fixture: three 16 x 8 x 4 byte buffers (host 'h', device 'd', device 'D'), a 4 x 3 x 2
#: region at offset (8, 2, 1), row pitch 16 and slice pitch 128 on both sides.
_FULL = (16, 8, 4)
_BYTES = _FULL[0] * _FULL[1] * _FULL[2]
_COPY = (4, 3, 2)
_OFFSET = (8, 2, 1)


def _template(base: bytes, copied: bytes) -> bytes:
    """Upstream's checkPattern template: ``base`` everywhere, ``copied`` in the region."""
    out = bytearray(base * _BYTES)
    for z in range(_COPY[2]):
        for y in range(_COPY[1]):
            start = (_OFFSET[2] + z) * _FULL[0] * _FULL[1] + (_OFFSET[1] + y) * _FULL[0] + _OFFSET[0]
            out[start : start + _COPY[0]] = copied * _COPY[0]
    return bytes(out)


class _Buffers:
    """HostPtr, DevicePtr, DevicePtr2 of upstream's fixture, and the two devices. HostPtr is
    ``olMemAllocHost`` memory as upstream's, or plain host memory on a device without HOST
    memory (``host_memory`` False): the copies are what these cases test."""

    def __init__(self, device: Any, host: Any, host_memory: bool) -> None:
        self.device, self.host = device, host
        self._plain = None if host_memory else (ctypes.c_uint8 * _BYTES)()
        self.host_ptr = ol.olMemAllocHost(device, _BYTES) if self._plain is None else ctypes.addressof(self._plain)
        self.device_ptr = ol.olMemAlloc(device, A.DEVICE, _BYTES)
        self.device_ptr2 = ol.olMemAlloc(device, A.DEVICE, _BYTES)
        for address, fill in ((self.host_ptr, b"h"), (self.device_ptr, b"d"), (self.device_ptr2, b"D")):
            staged = (ctypes.c_uint8 * _BYTES).from_buffer_copy(fill * _BYTES)
            ol.olMemcpy(None, address, self._owner(address), ctypes.addressof(staged), host, _BYTES)

    def _owner(self, address: int) -> Any:
        """The device whose memory ``address`` is (plain host memory: the host device's)."""
        return self.host if self._plain is not None and address == self.host_ptr else self.device

    def rect(self, ptr: Any, device: Any, pitch: int = _FULL[0], slice_pitch: int = _FULL[0] * _FULL[1]) -> ol.Rect:
        return ol.Rect(ptr, device, _OFFSET, pitch, slice_pitch)

    def read(self, address: int) -> bytes:
        """Upstream's checkPattern read: the whole buffer, copied back synchronously."""
        out = (ctypes.c_uint8 * _BYTES)()
        ol.olMemcpy(None, ctypes.addressof(out), self.host, address, self._owner(address), _BYTES)
        return bytes(out)

    def free(self) -> None:
        for address in (self.host_ptr, self.device_ptr, self.device_ptr2):
            if self._owner(address) is self.device:
                ol.olMemFree(address)


class TestMemcpyRectUpstream(Base):
    """olMemcpyRectTest, case by case (upstream skips CUDA, which offload supports)."""

    @pytest.fixture
    def bufs(self, device: Any, host_device: Any, capabilities: Any, queue: Any) -> Iterator[_Buffers]:
        require(capabilities, "memory", "allocates device memory")
        require(capabilities, "copies", "copies between host and device memory")
        made = _Buffers(device, host_device, capabilities.host_memory)
        yield made
        ol.olSyncQueue(queue)
        made.free()

    def test_success_hto_d(self, bufs: _Buffers, queue: Any) -> None:
        ol.olMemcpyRect(queue, bufs.rect(bufs.device_ptr, bufs.device), bufs.rect(bufs.host_ptr, bufs.host), _COPY)
        ol.olSyncQueue(queue)
        assert bufs.read(bufs.device_ptr) == _template(b"d", b"h")

    def test_success_dto_h(self, bufs: _Buffers, queue: Any) -> None:
        ol.olMemcpyRect(queue, bufs.rect(bufs.host_ptr, bufs.host), bufs.rect(bufs.device_ptr, bufs.device), _COPY)
        ol.olSyncQueue(queue)
        assert bufs.read(bufs.host_ptr) == _template(b"h", b"d")

    def test_success_dto_d(self, bufs: _Buffers, queue: Any) -> None:
        ol.olMemcpyRect(queue, bufs.rect(bufs.device_ptr, bufs.device), bufs.rect(bufs.device_ptr2, bufs.device), _COPY)
        ol.olSyncQueue(queue)
        assert bufs.read(bufs.device_ptr) == _template(b"d", b"D")

    def test_invalid_dst_ptr(self, bufs: _Buffers, queue: Any) -> None:
        with raises(NULL_POINTER):
            ol.olMemcpyRect(queue, bufs.rect(None, bufs.device), bufs.rect(bufs.host_ptr, bufs.host), _COPY)

    def test_invalid_src_ptr(self, bufs: _Buffers, queue: Any) -> None:
        with raises(NULL_POINTER):
            ol.olMemcpyRect(queue, bufs.rect(bufs.host_ptr, bufs.device), bufs.rect(None, bufs.host), _COPY)

    def test_invalid_dst_device(self, bufs: _Buffers, queue: Any) -> None:
        with raises(NULL_HANDLE):
            ol.olMemcpyRect(queue, bufs.rect(bufs.host_ptr, None), bufs.rect(bufs.device_ptr, bufs.host), _COPY)

    def test_invalid_src_device(self, bufs: _Buffers, queue: Any) -> None:
        with raises(NULL_HANDLE):
            ol.olMemcpyRect(queue, bufs.rect(bufs.host_ptr, bufs.host), bufs.rect(bufs.device_ptr, None), _COPY)

    def test_invalid_size(self, bufs: _Buffers, queue: Any) -> None:
        """Upstream InvalidSize: a (0, 0, 0) extent is INVALID_SIZE (the core's table check: an
        extent with any zero side); nothing is copied."""
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemcpyRect(queue, bufs.rect(bufs.host_ptr, bufs.host), bufs.rect(bufs.device_ptr, bufs.device), (0, 0, 0))
        ol.olSyncQueue(queue)
        assert bufs.read(bufs.host_ptr) == b"h" * _BYTES and bufs.read(bufs.device_ptr) == b"d" * _BYTES

    @pytest.mark.parametrize("side", ["src", "dst"])
    def test_invalid_ptr_align(self, bufs: _Buffers, queue: Any, side: str) -> None:
        """Upstream Invalid{Src,Dst}PtrAlign: a base 2 bytes past an allocation is INVALID_SIZE there
        (HSA's rect copy needs 4-byte alignment). offload copies it (row by row where the driver's
        rect copy cannot): the region lands where the pitches say."""
        shift = {"src": (0, 2), "dst": (2, 0)}[side]
        dst, src = bufs.rect(bufs.host_ptr + shift[0], bufs.host), bufs.rect(bufs.device_ptr + shift[1], bufs.device)
        ol.olMemcpyRect(queue, dst, src, _COPY)
        ol.olSyncQueue(queue)
        expected = _template(b"h", b"d")
        assert bufs.read(bufs.host_ptr) == (b"hh" + expected[:-2] if side == "dst" else expected)

    @pytest.mark.parametrize("field", ["dst_pitch", "src_pitch", "dst_slice", "src_slice"])
    def test_invalid_pitch_or_slice_align(self, bufs: _Buffers, queue: Any, field: str) -> None:
        """Upstream Invalid{Dst,Src}{Pitch,Slice}Align: a row pitch or slice pitch of 2 bytes,
        smaller than the region it must hold: INVALID_SIZE."""
        side, which = field.split("_")
        pitches = {"pitch": (2, 128), "slice": (16, 2)}[which]
        dst = bufs.rect(bufs.host_ptr, bufs.host, *(pitches if side == "dst" else ()))
        src = bufs.rect(bufs.device_ptr, bufs.device, *(pitches if side == "src" else ()))
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemcpyRect(queue, dst, src, _COPY)

    def test_invalid_dst_unalloc(self, bufs: _Buffers, queue: Any) -> None:
        """Upstream: host memory liboffload did not allocate is INVALID_VALUE. offload: the host
        device reaches any mapped host memory, as in olMemcpy, so the copy is made."""
        buffer = (ctypes.c_uint8 * _BYTES).from_buffer_copy(b"h" * _BYTES)
        ol.olMemcpyRect(queue, bufs.rect(ctypes.addressof(buffer), bufs.host), bufs.rect(bufs.device_ptr, bufs.device), _COPY)
        ol.olSyncQueue(queue)
        assert bytes(buffer) == _template(b"h", b"d")

    def test_invalid_src_unalloc(self, bufs: _Buffers, queue: Any) -> None:
        """Upstream: INVALID_VALUE, as for the destination; offload makes the copy."""
        buffer = (ctypes.c_uint8 * _BYTES).from_buffer_copy(b"h" * _BYTES)
        ol.olMemcpyRect(queue, bufs.rect(bufs.device_ptr, bufs.device), bufs.rect(ctypes.addressof(buffer), bufs.host), _COPY)
        ol.olSyncQueue(queue)
        assert bufs.read(bufs.device_ptr) == _template(b"d", b"h")
