"""Views of an Array by basic indexing and by reshape, as numpy makes them: ints, slices (any
step), ``...`` and ``None`` give a view of the same memory with new shape, byte strides and
offset; nothing is copied. Indexing that numpy answers with a copy (integer arrays, boolean
masks) is refused: an offload.Array is a view, never an array library."""

from __future__ import annotations

import operator
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError, OffloadTypeError, OffloadValueError
from ._rect import c_strides

Layout = tuple[tuple[int, ...], tuple[int, ...], int]  # shape, byte strides, byte offset


class OffloadIndexError(OffloadError, IndexError):
    """An index out of range (an IndexError, as numpy raises, and an OffloadError: INVALID_ARGUMENT)."""


def _refused(item: Any) -> OffloadTypeError:
    return OffloadTypeError(
        ErrorCode.INVALID_ARGUMENT,
        f"offload.Array indexes with ints, slices, ... and None (views of the same memory), not "
        f"{type(item).__name__} {item!r:.40}: integer-array and boolean indexing copy in numpy; "
        "use to_numpy() and index the host copy",
    )


def index_view(shape: tuple[int, ...], strides: tuple[int, ...], offset: int, key: Any) -> Layout:
    """The layout of ``view[key]`` for basic indexing (ints, slices, one ``...``, ``None``):
    OffloadIndexError for an int out of range or too many indices, OffloadTypeError for
    anything else (naming it)."""
    items = key if isinstance(key, tuple) else (key,)
    ellipses = sum(1 for item in items if item is Ellipsis)
    if ellipses > 1:
        raise OffloadIndexError(ErrorCode.INVALID_ARGUMENT, "an index can only have a single ellipsis ('...')")
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    if used > len(shape):
        raise OffloadIndexError(
            ErrorCode.INVALID_ARGUMENT, f"too many indices: {used} for an array of {len(shape)} dimension(s)"
        )
    new_shape: list[int] = []
    new_strides: list[int] = []
    axis = 0
    for item in items:
        if item is None:
            new_shape.append(1)
            new_strides.append(0)
        elif item is Ellipsis:
            for _ in range(len(shape) - used):
                new_shape.append(shape[axis])
                new_strides.append(strides[axis])
                axis += 1
        elif isinstance(item, slice):
            try:
                start, stop, step = item.indices(shape[axis])
            except (TypeError, ValueError) as error:  # a bound that is no integer, a step of 0
                raise OffloadValueError(ErrorCode.INVALID_ARGUMENT, f"slice {item!r}: {error}") from None
            count = len(range(start, stop, step))
            if count:
                offset += start * strides[axis]
            new_shape.append(count)
            new_strides.append(strides[axis] * step)
            axis += 1
        else:
            offset += _integer(item, shape[axis], axis) * strides[axis]
            axis += 1
    new_shape.extend(shape[axis:])
    new_strides.extend(strides[axis:])
    return tuple(new_shape), tuple(new_strides), offset


def _integer(item: Any, size: int, axis: int) -> int:
    if item.__class__ is bool or getattr(item, "dtype", None) is not None and getattr(item, "ndim", 0) != 0:
        raise _refused(item)
    try:
        index = operator.index(item)
    except TypeError:
        raise _refused(item) from None
    if not -size <= index < size:
        raise OffloadIndexError(
            ErrorCode.INVALID_ARGUMENT, f"index {index} is out of bounds for axis {axis} with size {size}"
        )
    return index + size if index < 0 else index


def reshaped(shape: tuple[int, ...], itemsize: int, contiguous: bool, wanted: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and C strides of a C-contiguous array of ``shape`` seen as ``wanted`` (an int or
    ints, one of them -1 to be inferred); INVALID_ARGUMENT for a strided array (copy() it first)
    or sizes that disagree."""
    if not contiguous:
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT,
            f"reshape needs a C-contiguous Array, not a strided view of shape {shape}: reshape a copy() of it",
        )
    items = wanted[0] if len(wanted) == 1 and isinstance(wanted[0], tuple | list) else wanted
    try:
        dims = [operator.index(n) for n in items]
    except TypeError:
        raise OffloadTypeError(ErrorCode.INVALID_ARGUMENT, f"reshape takes ints, got {wanted!r}") from None
    total = 1
    for n in shape:
        total *= n
    unknown = [i for i, n in enumerate(dims) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in dims):
        raise OffloadValueError(ErrorCode.INVALID_SIZE, f"reshape: {tuple(dims)} is not a shape (one -1 at most)")
    known = 1
    for n in dims:
        known *= n if n != -1 else 1
    if unknown:
        if known == 0 or total % known:
            raise OffloadValueError(ErrorCode.INVALID_SIZE, f"cannot reshape an array of size {total} into {tuple(dims)}")
        dims[unknown[0]] = total // known
    elif known != total:
        raise OffloadValueError(ErrorCode.INVALID_SIZE, f"cannot reshape an array of size {total} into {tuple(dims)}")
    return tuple(dims), c_strides(tuple(dims), itemsize)
