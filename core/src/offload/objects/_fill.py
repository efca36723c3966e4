"""``Array.fill``: every element of a view set to one value, on the device where it must be.

A C-contiguous view is one ``olMemFill`` (a one-byte pattern where every byte of the value is the
same, as zeros are; else the element's bytes, which every backend fills: liboffload's fill takes
any pattern size). A strided view of memory the host reads and writes in place (every allocation
of the host platform, pinned and managed memory where DLPack says so) is written by numpy when no
queue orders the fill: no scratch memory, no copies. Any other strided view is laid out as at most
three pitched dimensions (its element order does not matter to a fill: reversed axes are turned
round, axes of stride 0 hold one element, adjacent axes are merged): a contiguous scratch
allocation of that many elements is filled with ``olMemFill`` and copied into the view with one
pitched copy (``olMemcpyRect``, device to device) per remaining outer index, in queue order. A view
whose elements overlap (``as_strided`` tricks) is filled by numpy where the host can write the
memory (after the queue's work), and refused elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._values.enums import AllocType, ErrorCode
from .._values.errors import OffloadValueError
from ._buffer import Buffer
from ._memory import check_queue, copy_rect, fill_range
from ._rect import RectLayout, packed

if TYPE_CHECKING:
    from ._array import Array
    from ._queue import Queue

Piece = tuple[int, RectLayout]  # byte offset from the view's address, pitched layout


def pattern_of(np: Any, value: Any, dtype: Any) -> bytes:
    """The bytes of ``value`` as one element of ``dtype`` (converted as numpy's ``fill`` converts
    it), shortened to one byte when all its bytes are equal; INVALID_ARGUMENT naming the value."""
    if np.ndim(value) != 0:
        raise OffloadValueError(
            ErrorCode.INVALID_ARGUMENT, f"fill takes one value (a scalar), got {type(value).__name__} of shape {np.shape(value)}"
        )
    element = np.empty(1, dtype)
    try:
        element[0] = value
    except (TypeError, ValueError, OverflowError) as error:
        raise OffloadValueError(ErrorCode.INVALID_ARGUMENT, f"fill: {value!r} is not a {dtype} value: {error}") from None
    data: bytes = element.tobytes()
    return data[:1] if data.count(data[:1]) == len(data) else data


def fill_pieces(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> list[Piece] | None:
    """The pitched pieces that together hold every element of a strided view (offsets relative to
    its element 0), None where its elements overlap."""
    base = 0
    dims: list[tuple[int, int]] = []  # (stride, count), elements distinct along each
    for n, s in zip(shape, strides):
        if n == 1 or s == 0:
            continue
        if s < 0:
            base += (n - 1) * s
            s = -s
        dims.append((s, n))
    dims.sort(reverse=True)
    merged: list[tuple[int, int]] = []
    for s, n in dims:
        if merged and merged[-1][0] == s * n:  # the outer axis steps over exactly this one
            n *= merged.pop()[1]
        merged.append((s, n))
    width = merged.pop()[1] * itemsize if merged and merged[-1][0] == itemsize else itemsize
    inner, beyond = merged[-2:], merged[:-2]  # up to two pitched axes (outermost first), then the rest
    row, rows = inner[-1] if inner else (width, 1)
    slab, slices = inner[0] if len(inner) == 2 else (row * rows, 1)
    if row < width:
        return None
    if slab < row * rows:  # slices closer than a slice of whole row pitches (olMemcpyRect's rule): one copy each
        if slab < (rows - 1) * row + width:
            return None
        beyond, slab, slices = merged[:-1], row * rows, 1
    layout: RectLayout = ((width, rows, slices), row, slab)
    pieces = [(base, layout)]
    for s, n in beyond:  # axes beyond three: one pitched copy per index
        pieces = [(offset + i * s, layout) for offset, _ in pieces for i in range(n)]
    return pieces


def fill_array(np: Any, array: Array, value: Any, queue: Queue | None) -> None:
    """Set every element of ``array`` to ``value`` (see the module's docstring)."""
    pattern = pattern_of(np, value, array.dtype)
    check_queue(queue)
    buffer = array.buffer
    buffer.writable_address("fill")
    if not array.size:
        return
    if array.is_contiguous:
        fill_range(buffer, array.offset, pattern, array.nbytes, queue)
        return
    host = array.buffer.host_accessible
    if host and queue is None:  # host-visible memory, no queue to order after: the host writes it
        _fill_on_host(np, array, pattern)
        return
    pieces = fill_pieces(array.shape, array.strides, array.itemsize)
    if pieces is None:
        if not host:
            raise OffloadValueError(
                ErrorCode.INVALID_ARGUMENT,
                f"fill: the elements of a view with strides {array.strides} overlap; only host-accessible memory "
                "can be filled so (fill the Array it views)",
            )
        assert queue is not None  # (host memory without a queue was filled above)
        queue.sync()
        _fill_on_host(np, array, pattern)
        return
    (width, rows, slices), _, _ = pieces[0][1]
    scratch = Buffer(width * rows * slices, array.device, AllocType.DEVICE)
    fill_range(scratch, 0, pattern, scratch.size, queue)
    source = packed(pieces[0][1])
    for offset, layout in pieces:
        copy_rect(queue, array.address + offset, array.device, layout, scratch.address, array.device, source, (scratch, array))
    if queue is None:
        scratch.close()


def _fill_on_host(np: Any, array: Array, pattern: bytes) -> None:
    """numpy writes the element ``pattern`` into every element of a host-visible strided view."""
    element = np.frombuffer(pattern * (array.itemsize // len(pattern)), array.dtype)[0]
    view = np.asarray(array)
    view[...] = element
    del view  # (the view is an export: dropped at once)
