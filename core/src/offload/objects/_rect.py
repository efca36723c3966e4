"""Layouts of Array views: C strides, the byte span of a strided view, and the pitched layout of
a 2-D or 3-D view whose rows are runs of adjacent elements (a slice such as ``a[1:4, 2:6]``),
which ``_memory.copy_rect`` copies with one ``olMemcpyRect`` instead of its whole span. Plain
arithmetic on shapes and strides: it imports nothing of the layer."""

from __future__ import annotations

#: (extent: bytes per row, rows, slices), row pitch, slice pitch
RectLayout = tuple[tuple[int, int, int], int, int]


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def byte_span(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """``(low, high)`` byte offsets touched by a strided view (high is one past the end)."""
    if any(n == 0 for n in shape):
        return 0, 0
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + itemsize
    return low, high


def rect_layout(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> RectLayout | None:
    """The pitched layout of a view ``olMemcpyRect`` can copy: 2 or 3 dimensions, none empty, the
    last stride the item size, each row within its row pitch and each slice's rows within its
    slice pitch (so no two rows overlap); None for any other view."""
    if len(shape) not in (2, 3) or 0 in shape or strides[-1] != itemsize:
        return None
    width, rows = shape[-1] * itemsize, shape[-2]
    row = strides[-2] if rows > 1 else width
    if row < width:
        return None
    slices, slab = 1, row * rows
    if len(shape) == 3 and shape[0] > 1:
        slices, slab = shape[0], strides[0]
        if slab < row * rows:
            return None
    return (width, rows, slices), row, slab


def packed(layout: RectLayout) -> RectLayout:
    """The same extent laid out C-contiguously (a numpy array of the view's shape)."""
    (width, rows, slices), _, _ = layout
    return (width, rows, slices), width, width * rows
