"""Strided 2-D and 3-D Array views of whole rows (``a[1:4, 2:6]``) copied with one olMemcpyRect
both ways; views whose rows overlap or whose elements are apart keep the other paths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload
from offload import OffloadError
from offload.objects import _memory, _rect


@pytest.fixture
def rect_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The extents and pitches of every olMemcpyRect the object layer makes (the call goes through)."""
    calls: list[tuple[Any, ...]] = []
    real = _memory.olMemcpyRect

    def recording(queue: Any, dst: Any, src: Any, extent: Any) -> None:
        calls.append((tuple(extent), (dst.row_pitch, dst.slice_pitch), (src.row_pitch, src.slice_pitch)))
        real(queue, dst, src, extent)

    monkeypatch.setattr(_memory, "olMemcpyRect", recording)
    return calls


def test_a_2d_slice_both_ways(device: offload.objects.Device, rect_calls: list[tuple[Any, ...]]) -> None:
    data = np.arange(40, dtype=np.int32).reshape(5, 8)
    base = offload.to_device(data, device)
    window = base.buffer.view(np.int32, (3, 4), (32, 4), offset=1 * 32 + 2 * 4)  # data[1:4, 2:6]
    assert not window.is_contiguous
    np.testing.assert_array_equal(window.to_numpy(), data[1:4, 2:6])
    window.copy_from(-np.arange(12, dtype=np.int32).reshape(3, 4))
    expected = data.copy()
    expected[1:4, 2:6] = -np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(base.to_numpy(), expected)  # nothing outside the window moved
    assert rect_calls == [((16, 3, 1), (16, 48), (32, 96)), ((16, 3, 1), (32, 96), (16, 48))]


def test_a_3d_slice_on_a_queue(device: offload.objects.Device, rect_calls: list[tuple[Any, ...]]) -> None:
    data = np.arange(120, dtype=np.float64).reshape(4, 5, 6)
    base = offload.to_device(data, device)
    box = base.buffer.view(np.float64, (2, 3, 3), (240, 48, 8), offset=(1 * 30 + 1 * 6 + 2) * 8)  # data[1:3, 1:4, 2:5]
    with device.queue() as queue:
        out = box.to_numpy(queue=queue)
        box.copy_from(np.full((2, 3, 3), -1.0), queue=queue)
    np.testing.assert_array_equal(out, data[1:3, 1:4, 2:5])
    expected = data.copy()
    expected[1:3, 1:4, 2:5] = -1.0
    np.testing.assert_array_equal(base.to_numpy(), expected)
    assert [call[0] for call in rect_calls] == [(24, 3, 2), (24, 3, 2)]


def test_views_that_are_not_rows_keep_the_other_paths(device: offload.objects.Device, rect_calls: list[tuple[Any, ...]]) -> None:
    data = np.arange(24, dtype=np.int32).reshape(4, 6)
    base = offload.to_device(data, device)
    overlapping = base.buffer.view(np.int32, (3, 4), (8, 4))  # rows two elements apart, four wide
    np.testing.assert_array_equal(
        overlapping.to_numpy(), np.lib.stride_tricks.as_strided(data, (3, 4), (8, 4))
    )
    cols = base.buffer.view(np.int32, (4, 3), (24, 8), offset=4)  # data[:, 1::2]
    np.testing.assert_array_equal(cols.to_numpy(), data[:, 1::2])
    with pytest.raises(OffloadError, match="C-contiguous Array or a 2-D/3-D view of whole rows"):
        overlapping.copy_from(np.zeros((3, 4), np.int32))
    assert rect_calls == []


def test_a_row_window_refuses_a_mismatched_source(device: offload.objects.Device) -> None:
    base = offload.to_device(np.zeros((4, 6), np.int16), device)
    window = base.buffer.view(np.int16, (2, 3), (12, 2), offset=2)
    with pytest.raises(OffloadError, match="does not match"):
        window.copy_from(np.zeros((3, 2), np.int16))
    with pytest.raises(OffloadError, match="must be C-contiguous and match"):
        window.copy_from(offload.to_device(np.zeros((2, 4), np.int16), device))


def test_rect_layout() -> None:
    assert _rect.rect_layout((3, 4), (32, 4), 4) == ((16, 3, 1), 32, 96)
    assert _rect.rect_layout((2, 3, 3), (240, 48, 8), 8) == ((24, 3, 2), 48, 240)
    assert _rect.rect_layout((1, 4), (0, 4), 4) == ((16, 1, 1), 16, 16)  # one row: any row stride
    assert _rect.rect_layout((3, 4), (8, 4), 4) is None  # rows overlap
    assert _rect.rect_layout((3, 4), (-32, 4), 4) is None  # reversed rows
    assert _rect.rect_layout((2, 3, 4), (32, 16, 4), 4) is None  # slices overlap
    assert _rect.rect_layout((4,), (4,), 4) is None and _rect.rect_layout((0, 4), (16, 4), 4) is None


def test_strided_array_sources_device_to_device(device: offload.objects.Device, rect_calls: list[tuple[Any, ...]]) -> None:
    """An Array copied from a strided Array view of rows (issue 17: rect copies of 2-D/3-D
    Arrays): one pitched copy on the device, into a contiguous Array or into another window."""
    data = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    base = offload.to_device(data, device)
    box = base.buffer.view(np.float32, (2, 2, 3), (80, 20, 4), offset=(1 * 20 + 1 * 5 + 1) * 4)  # data[1:3, 1:3, 1:4]
    dense = offload.empty((2, 2, 3), np.float32, device)
    with device.queue() as queue:
        dense.copy_from(box, queue=queue)
    np.testing.assert_array_equal(dense.to_numpy(), data[1:3, 1:3, 1:4])
    target = offload.to_device(np.zeros((3, 4, 5), np.float32), device)
    window = target.buffer.view(np.float32, (2, 2, 3), (80, 20, 4), offset=2 * 4)  # zeros[0:2, 0:2, 2:5]
    window.copy_from(box)
    expected = np.zeros((3, 4, 5), np.float32)
    expected[0:2, 0:2, 2:5] = data[1:3, 1:3, 1:4]
    np.testing.assert_array_equal(target.to_numpy(), expected)
    assert [call[0] for call in rect_calls[:2]] == [(12, 2, 2), (12, 2, 2)]
    assert rect_calls[0][1:] == ((12, 24), (20, 80)) and rect_calls[1][1:] == ((20, 80), (20, 80))
    overlapping = base.buffer.view(np.float32, (2, 2, 3), (8, 4, 4))
    with pytest.raises(OffloadError, match=r"the source needs a C-contiguous Array or a 2-D/3-D view of whole rows"):
        dense.copy_from(overlapping)
