"""olMemcpyRect's optional ``data_copy_rect`` hook: one call for the whole region where a backend
has it (host memory and one device), the row-by-row ``data_submit`` path where it has not, and
the core's range checks before either (a region past its allocation never reaches the hook)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload._core.session import STATE

from helpers import MinimalBackend, devices

A = ol.AllocType


class RowsBackend(MinimalBackend):
    """One device whose memory is ctypes buffers; copies by memmove, logged per call."""

    device_name = "dev0"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.buffers: dict[int, Any] = {}

    @ol.hookimpl
    def get_device_info(self, device: str) -> dict[ol.DeviceInfo, Any]:
        return {ol.DeviceInfo.NAME: "rect-dev0", ol.DeviceInfo.VENDOR: "test"}

    @ol.hookimpl
    def mem_alloc(self, device: str, alloc_type: ol.AllocType, size: int) -> int:
        buffer = (ctypes.c_char * size)()
        self.buffers[ctypes.addressof(buffer)] = buffer
        return ctypes.addressof(buffer)

    @ol.hookimpl
    def mem_free(self, device: str, address: int, alloc_type: ol.AllocType) -> None:
        del self.buffers[address]

    @ol.hookimpl
    def data_submit(self, device: str, dst: int, src: int, size: int, queue: Any) -> None:
        self.calls.append(("submit", size))
        ctypes.memmove(dst, src, size)

    @ol.hookimpl
    def data_retrieve(self, device: str, dst: int, src: int, size: int, queue: Any) -> None:
        self.calls.append(("retrieve", size))
        ctypes.memmove(dst, src, size)


class RectBackend(RowsBackend):
    """RowsBackend with ``data_copy_rect``."""

    @ol.hookimpl
    def data_copy_rect(
        self, device: str, dst: int, dst_pitches: tuple[int, int], src: int, src_pitches: tuple[int, int],
        extent: tuple[int, int, int], queue: Any,
    ) -> None:
        self.calls.append(("rect", dst_pitches, src_pitches, extent))
        width, height, depth = extent
        for z in range(depth):
            for y in range(height):
                ctypes.memmove(
                    dst + z * dst_pitches[1] + y * dst_pitches[0], src + z * src_pitches[1] + y * src_pitches[0], width
                )


@pytest.fixture(params=[RectBackend, RowsBackend], ids=["hook", "rows"])
def backend(request: pytest.FixtureRequest) -> Iterator[RowsBackend]:
    instance = request.param()
    ol.register_backend("rect-test", instance)
    ol.olInit()
    try:
        yield instance
    finally:
        ol.olShutDown()
        ol.unregister_backend("rect-test")
        assert STATE.ctx is None


def _devices() -> tuple[Any, Any]:
    found = devices()
    device = next(d for d in found if ol.olGetDeviceInfo(d, ol.DeviceInfo.NAME) == "rect-dev0")
    host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
    return device, host


def test_a_3d_region_is_one_hook_call_or_a_copy_per_row(backend: RowsBackend) -> None:
    device, host = _devices()
    src = (ctypes.c_uint8 * 600)(*[i % 251 for i in range(600)])  # 3 slices of 5 rows of 40
    memory = ol.olMemAlloc(device, A.DEVICE, 3 * 256)  # 3 slices of 8 rows of 32
    try:
        ol.olMemcpyRect(
            None,
            ol.Rect(memory, device, (4, 1, 0), 32, 256),
            ol.Rect(ctypes.addressof(src), host, (2, 0, 0), 40, 200),
            (16, 4, 3),
        )
        got = bytes((ctypes.c_uint8 * 768).from_address(memory))
    finally:
        ol.olMemFree(memory)
    for z in range(3):
        for y in range(4):
            assert got[z * 256 + (1 + y) * 32 + 4 :][:16] == bytes(src)[z * 200 + y * 40 + 2 :][:16]
    assert sum(1 for b in got if b) <= 16 * 4 * 3 and sum(1 for b in got if b) > 0
    if isinstance(backend, RectBackend):
        assert backend.calls == [("rect", (32, 256), (40, 200), (16, 4, 3))]
    else:
        assert backend.calls == [("submit", 16)] * 12


def test_a_region_past_its_allocation_never_reaches_the_hook(backend: RowsBackend) -> None:
    device, host = _devices()
    src = (ctypes.c_uint8 * 4096)()
    memory = ol.olMemAlloc(device, A.DEVICE, 240)
    try:
        with pytest.raises(ol.OffloadError) as caught:  # the 4th row (bytes 192..256) overruns
            ol.olMemcpyRect(
                None,
                ol.Rect(memory, device, (0, 0, 0), 64, 4096),
                ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 64, 4096),
                (64, 4, 1),
            )
    finally:
        ol.olMemFree(memory)
    assert caught.value.code is ol.ErrorCode.INVALID_SIZE
    assert all(call[0] != "rect" for call in backend.calls)


def test_a_device_to_host_region_is_one_hook_call(backend: RowsBackend) -> None:
    device, host = _devices()
    memory = ol.olMemAlloc(device, A.DEVICE, 256)
    dst = (ctypes.c_uint8 * 256)()
    try:
        ctypes.memmove(memory, bytes(range(256)), 256)
        ol.olMemcpyRect(
            None,
            ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 16, 256),
            ol.Rect(memory, device, (0, 2, 0), 32, 256),
            (8, 3, 1),
        )
    finally:
        ol.olMemFree(memory)
    for y in range(3):
        assert bytes(dst)[y * 16 :][:8] == bytes(range((2 + y) * 32, (2 + y) * 32 + 8))
    expected = [("rect", (16, 256), (32, 256), (8, 3, 1))] if isinstance(backend, RectBackend) else [("retrieve", 8)] * 3
    assert backend.calls == expected
