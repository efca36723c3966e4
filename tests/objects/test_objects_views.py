"""Arrays a numpy user can hold (issue 32): basic indexing and slicing as views, ``reshape``,
``fill`` on the device, ``zeros``/``ones``/``full`` and their ``*_like`` forms, ``copy()``, and
``a[key] = value``; on every device present (host, the simulated CUDA and AMDGPU drivers, OpenCL)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import offload
from offload import AllocType, ErrorCode, OffloadError
from offload.objects import _fill, _indexing, _memory


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The fills and pitched copies the object layer makes (each call goes through)."""
    made: dict[str, list[Any]] = {"fill": [], "rect": []}
    fill, rect = _fill.fill_range, _memory.olMemcpyRect

    def filling(buffer: Any, offset: int, pattern: bytes, size: int, queue: Any) -> None:
        made["fill"].append((pattern, size))
        fill(buffer, offset, pattern, size, queue)

    def copying(queue: Any, dst: Any, src: Any, extent: Any) -> None:
        made["rect"].append((tuple(extent), dst.row_pitch, dst.slice_pitch))
        rect(queue, dst, src, extent)

    monkeypatch.setattr(_fill, "fill_range", filling)
    monkeypatch.setattr(_memory, "olMemcpyRect", copying)
    return made


KEYS = [
    (1,), (-1,), (slice(1, 3),), (slice(None, None, -1),), (slice(None, None, 2), slice(1, None, 3)),
    (Ellipsis, 2), (None, slice(1, 3)), (1, 2), (slice(1, 1),), (slice(5, 1, -2), Ellipsis, None),
    (0, slice(None), slice(None, None, -2)),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing_views_what_numpy_views(device: offload.objects.Device, key: tuple[Any, ...]) -> None:
    data = np.arange(4 * 6 * 5, dtype=np.int32).reshape(4, 6, 5)
    base = offload.to_device(data, device)
    view = base[key]
    expected = data[key]
    assert (view.shape, view.strides) == (expected.shape, expected.strides) or expected.size == 0
    assert view.buffer is base.buffer and view.dtype == data.dtype
    np.testing.assert_array_equal(view.to_numpy(), expected)
    np.testing.assert_array_equal(view.copy().to_numpy(), expected)


def test_indexing_mistakes_are_named(device: offload.objects.Device) -> None:
    base = offload.zeros((3, 4), np.float32, device)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3") as info:
        base[3]
    assert isinstance(info.value, OffloadError) and info.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(IndexError, match="too many indices"):
        base[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        base[..., ...]
    for fancy in ([0, 1], np.array([True, False, True]), 1.0, True, np.arange(2)):
        with pytest.raises(TypeError, match="integer-array and boolean indexing copy") as refused:
            base[fancy]
        assert refused.value.code is ErrorCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    for bad in (slice(None, None, 0), slice(0.5, 2)):
        with pytest.raises(OffloadError, match="slice"):
            base[:, bad]
    assert base[np.int64(2)].shape == (4,)  # numpy integers index as ints
    assert [row.shape for row in base] == [(4,)] * 3  # iteration stops at IndexError


def test_setitem_fills_and_copies(device: offload.objects.Device, calls: dict[str, list[Any]]) -> None:
    expected = np.zeros((5, 8), np.float32)
    grid = offload.zeros((5, 8), np.float32, device)
    grid[1:-1, 1:-1] = 2.5
    expected[1:-1, 1:-1] = 2.5
    grid[0] = np.arange(8)
    expected[0] = np.arange(8)
    grid[:, 0] = 9  # a column: elements one row apart
    expected[:, 0] = 9
    grid[4, 2:6] = [1, 2, 3, 4]
    expected[4, 2:6] = [1, 2, 3, 4]
    grid[2:4, 3:5] = offload.full((2, 2), 7, np.float32, device)
    expected[2:4, 3:5] = 7
    grid[3, ::3] = np.float32(-1)
    expected[3, ::3] = -1
    np.testing.assert_array_equal(grid.to_numpy(), expected)
    assert calls["fill"][0] == (b"\0", 160)  # zeros: one one-byte fill of the whole array
    with pytest.raises(OffloadError, match=r"cannot set a view of shape \(3,\)") as info:
        grid[0, :3] = [1, 2]
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "float32", "float64", "complex64", "bool"])
def test_constructors(device: offload.objects.Device, dtype: str) -> None:
    for made, value in ((offload.zeros((3, 5), dtype, device), 0), (offload.ones((3, 5), dtype, device), 1),
                        (offload.full((3, 5), 3, dtype, device), 3)):
        assert made.device == device and made.dtype == np.dtype(dtype) and made.shape == (3, 5)
        np.testing.assert_array_equal(made.to_numpy(), np.full((3, 5), value, dtype))
    prototype = offload.full((2, 3), 4, dtype, device, AllocType.MANAGED if device.is_host else AllocType.DEVICE)
    for like, value in ((offload.zeros_like(prototype), 0), (offload.ones_like(prototype), 1),
                        (offload.full_like(prototype, 5), 5)):
        assert (like.shape, like.dtype, like.device, like.kind) == ((2, 3), prototype.dtype, device, prototype.kind)
        assert like.buffer is not prototype.buffer
        np.testing.assert_array_equal(like.to_numpy(), np.full((2, 3), value, dtype))
    assert offload.empty_like(prototype).shape == (2, 3)
    assert offload.zeros_like(np.ones((4,), np.int16), device=device).dtype == np.int16
    assert offload.full(4, 2.5, device=device).dtype == np.float64  # numpy's dtype for the value


def test_fill_patterns_and_queues(device: offload.objects.Device, calls: dict[str, list[Any]]) -> None:
    values = offload.empty((6, 7), np.float32, device)
    values.fill(1.5)  # bytes 00 00 c0 3f: the element is the pattern
    values.fill(0)
    with device.queue() as queue:
        values[::2].fill(-2, queue=queue)  # rows 0, 2, 4: one pitched copy of a filled scratch row block
        values[1::2, 1:6:2].fill(3, queue=queue)  # elements apart in rows apart
    assert calls["fill"][:2] == [(np.float32(1.5).tobytes(), 168), (b"\0", 168)]
    assert calls["rect"] == [((28, 3, 1), 56, 168), ((4, 3, 3), 8, 56)]
    expected = np.zeros((6, 7), np.float32)
    expected[::2] = -2
    expected[1::2, 1:6:2] = 3
    np.testing.assert_array_equal(values.to_numpy(), expected)
    with pytest.raises(OffloadError, match="fill: 'x' is not a int16 value") as info:
        offload.empty(3, np.int16, device).fill("x")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(OffloadError, match="fill takes one value"):
        values.fill([1, 2])
    with pytest.raises(OffloadError, match="queue must be"):
        values.fill(1, queue=device)  # type: ignore[arg-type]


@pytest.mark.parametrize("on_queue", [False, True])
def test_fill_of_reversed_and_four_dimensional_views(
    device: offload.objects.Device, calls: dict[str, list[Any]], on_queue: bool
) -> None:
    data = np.arange(2 * 3 * 4 * 5, dtype=np.int16).reshape(2, 3, 4, 5)
    array = offload.to_device(data, device)
    with device.queue() as queue:
        array[:, ::-1, 1:3, ::-2].fill(-7, queue=queue if on_queue else None)  # one pitched copy per outer index
        array[::-1, 1].fill(8, queue=queue if on_queue else None)
    data[:, ::-1, 1:3, ::-2] = -7
    data[::-1, 1] = 8
    np.testing.assert_array_equal(array.to_numpy(), data)
    host_written = array.buffer.host_accessible and not on_queue  # numpy wrote it: no scratch, no copies
    assert len(calls["rect"]) == (0 if host_written else 6 * 2 + 1)  # slices 10 bytes apart, 12 bytes of rows: one copy per slice
    assert len(calls["fill"]) == (0 if host_written else 2)


def test_fill_pieces() -> None:
    assert _fill.fill_pieces((3, 4), (32, 4), 4) == [(0, ((16, 3, 1), 32, 96))]
    assert _fill.fill_pieces((4,), (-8, ), 4) == [(-24, ((4, 4, 1), 8, 32))]
    assert _fill.fill_pieces((2, 3, 4), (12, 4, 1), 1) == [(0, ((24, 1, 1), 24, 24))]  # merged: contiguous
    assert _fill.fill_pieces((3, 4), (0, 4), 4) == [(0, ((16, 1, 1), 16, 16))]  # a repeated row is one row
    assert _fill.fill_pieces((3, 4), (8, 4), 4) is None  # rows overlap
    assert len(_fill.fill_pieces((2, 2, 2, 2), (160, 40, 16, 8), 4) or ()) == 2
    interleaved = _fill.fill_pieces((2, 3), (10, 4), 2)  # rows of 3 two-byte items 4 apart, 10 apart: no overlap
    assert interleaved == [(0, ((2, 3, 1), 4, 12)), (10, ((2, 3, 1), 4, 12))]
    assert _fill.fill_pieces((2, 3), (9, 4), 2) is None


def test_overlapping_views_fill_on_the_host_or_are_refused(device: offload.objects.Device) -> None:
    base = offload.zeros(10, np.int32, device)
    overlapping = base.buffer.view(np.int32, (3, 4), (8, 4))
    if overlapping.buffer.host_accessible:
        overlapping.fill(5)
        np.testing.assert_array_equal(base.to_numpy(), [5] * 8 + [0, 0])
        with device.queue() as queue:
            overlapping.fill(6, queue=queue)  # after the queue's work
        np.testing.assert_array_equal(base.to_numpy(), [6] * 8 + [0, 0])
    else:
        with pytest.raises(OffloadError, match=r"fill: the elements of a view with strides \(8, 4\) overlap"):
            overlapping.fill(5)


def test_reshape_views_contiguous_arrays(device: offload.objects.Device) -> None:
    data = np.arange(24, dtype=np.float64)
    array = offload.to_device(data, device)
    square = array.reshape(4, 6)
    assert square.buffer is array.buffer and square.strides == (48, 8)
    np.testing.assert_array_equal(square.to_numpy(), data.reshape(4, 6))
    np.testing.assert_array_equal(array[6:18].reshape((-1, 3)).to_numpy(), data[6:18].reshape(-1, 3))
    with pytest.raises(OffloadError, match="cannot reshape an array of size 24 into"):
        array.reshape(5, -1)
    with pytest.raises(OffloadError, match="one -1 at most"):
        array.reshape(-1, -1)
    with pytest.raises(OffloadError, match="reshape needs a C-contiguous Array") as info:
        square[:, 1:3].reshape(8)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    np.testing.assert_array_equal(square[:, 1:3].copy().reshape(8).to_numpy(), data.reshape(4, 6)[:, 1:3].ravel())


def test_copy_is_new_memory_on_the_same_device(device: offload.objects.Device) -> None:
    data = np.arange(30, dtype=np.int64).reshape(5, 6)
    array = offload.to_device(data, device)
    with device.queue() as queue:
        duplicate = array.copy(queue=queue)
        columns = array[:, ::2].copy(queue=queue)  # not rows: through the host
    assert duplicate.buffer is not array.buffer and duplicate.device == device and columns.is_contiguous
    array.fill(0)
    np.testing.assert_array_equal(duplicate.to_numpy(), data)
    np.testing.assert_array_equal(columns.to_numpy(), data[:, ::2])
    assert array[2, 3].item() == 0 and duplicate[2, 3].item() == 15
    with pytest.raises(OffloadError, match="item\\(\\) needs an Array of one element"):
        array.item()


def test_equality_is_identity(device: offload.objects.Device) -> None:
    array = offload.zeros(4, device=device)
    assert array == array and array != array[:] and array[:] != array.copy()


def test_views_go_to_numpy_and_dlpack(host: offload.objects.Device) -> None:
    data = np.arange(20, dtype=np.float32).reshape(4, 5)
    array = offload.to_device(data, host)
    view = array[1:, ::-2]
    np.testing.assert_array_equal(np.from_dlpack(view), data[1:, ::-2])
    shared = np.asarray(view)
    shared[0, 0] = 100  # the same memory
    assert array[1, 4].item() == 100
    del shared


def test_cuda_views_give_the_cuda_array_interface() -> None:
    found = [d for d in offload.devices() if d.platform.backend is offload.PlatformBackend.CUDA]
    if not found:
        pytest.skip("no CUDA device (simulated or real)")
    array = offload.to_device(np.arange(12, dtype=np.int32).reshape(3, 4), found[0])
    interface = array[1:, ::2].__cuda_array_interface__
    assert interface["shape"] == (2, 2) and interface["strides"] == (16, 8)
    assert interface["data"][0] == array.address + 16
    assert array[1:].__cuda_array_interface__["strides"] is None


def test_with_device_is_the_default_per_thread(device: offload.objects.Device) -> None:
    outside = offload.default_device()
    seen: list[offload.objects.Device] = []
    with device as entered:
        assert entered is device and offload.default_device() == device
        assert offload.zeros(3).device == device and offload.empty(2).device == device
        worker = threading.Thread(target=lambda: seen.append(offload.default_device()))
        worker.start()
        worker.join()
        with offload.devices("host")[0]:
            assert offload.default_device().is_host
        assert offload.default_device() == device
    assert seen == [outside] and offload.default_device() == outside


def test_index_view_layouts() -> None:
    assert _indexing.index_view((4, 6), (24, 4), 0, (slice(1, 3), 2)) == ((2,), (24,), 32)
    assert _indexing.index_view((4,), (8,), 16, (None, slice(None, None, -1))) == ((1, 4), (0, -8), 40)
