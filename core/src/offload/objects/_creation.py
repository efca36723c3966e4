"""The Array constructors: ``empty``, ``zeros``, ``ones``, ``full``, their ``*_like`` forms and
``to_device``, as numpy and CuPy spell them (a ``device``, a memory ``kind`` and a ``context``
added). Without a ``device`` the array goes where ``offload.default_device()`` says: the device of
the innermost ``with device:`` block of this thread, else the process's default device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._values.enums import AllocType
from ._array import Array, _numpy, new_array
from ._discovery import Device
from ._memory import as_dtype, as_shape
from ._makers import MAKERS

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ._context import Context
    from ._queue import Queue
else:
    DTypeLike = Any

Shape = int | tuple[int, ...]


def empty(
    shape: Shape,
    dtype: DTypeLike = "float32",
    device: Device | str | None = None,
    kind: AllocType | str = AllocType.DEVICE,
    *,
    context: Context | None = None,
) -> Array:
    """A new uninitialised Array on ``device`` (its Buffer owns the allocation, in ``context``:
    default the platform's default context)."""
    return new_array(as_shape(shape), as_dtype(_numpy(), dtype), device, kind, context)


def full(
    shape: Shape,
    fill_value: Any,
    dtype: DTypeLike | None = None,
    device: Device | str | None = None,
    kind: AllocType | str = AllocType.DEVICE,
    *,
    queue: Queue | None = None,
    context: Context | None = None,
) -> Array:
    """A new Array of ``fill_value`` (its dtype, numpy's choice for the value, when ``dtype`` is
    None), filled on the device (``Array.fill``); with ``queue`` the fill is enqueued."""
    dt = _numpy().asarray(fill_value).dtype if dtype is None else dtype
    out = empty(shape, dt, device, kind, context=context)
    out.fill(fill_value, queue=queue)
    return out


def zeros(
    shape: Shape,
    dtype: DTypeLike = "float32",
    device: Device | str | None = None,
    kind: AllocType | str = AllocType.DEVICE,
    *,
    queue: Queue | None = None,
    context: Context | None = None,
) -> Array:
    """A new Array of zeros (one byte-pattern ``olMemFill``)."""
    return full(shape, 0, dtype, device, kind, queue=queue, context=context)


def ones(
    shape: Shape,
    dtype: DTypeLike = "float32",
    device: Device | str | None = None,
    kind: AllocType | str = AllocType.DEVICE,
    *,
    queue: Queue | None = None,
    context: Context | None = None,
) -> Array:
    """A new Array of ones."""
    return full(shape, 1, dtype, device, kind, queue=queue, context=context)


def _like(prototype: Any, dtype: DTypeLike | None, shape: Shape | None) -> tuple[Any, Any, Device | None, AllocType]:
    """The shape, dtype, device and kind of a new array like ``prototype`` (an Array: its device and
    memory kind too; anything numpy takes: its shape and dtype, on the default device)."""
    if isinstance(prototype, Array):
        return (prototype.shape if shape is None else shape, prototype.dtype if dtype is None else dtype,
                prototype.device, prototype.kind)
    host = _numpy().asarray(prototype)
    return (host.shape if shape is None else shape, host.dtype if dtype is None else dtype, None, AllocType.DEVICE)


def empty_like(
    prototype: Any, dtype: DTypeLike | None = None, device: Device | str | None = None, *, shape: Shape | None = None
) -> Array:
    """A new uninitialised C-contiguous Array of ``prototype``'s shape and dtype, on its device
    and of its memory kind when it is an Array (``device`` overrides)."""
    dims, dt, dev, kind = _like(prototype, dtype, shape)
    return empty(dims, dt, dev if device is None else device, kind)


def zeros_like(
    prototype: Any, dtype: DTypeLike | None = None, device: Device | str | None = None, *,
    shape: Shape | None = None, queue: Queue | None = None,
) -> Array:
    """``empty_like`` filled with zeros."""
    return full_like(prototype, 0, dtype, device, shape=shape, queue=queue)


def ones_like(
    prototype: Any, dtype: DTypeLike | None = None, device: Device | str | None = None, *,
    shape: Shape | None = None, queue: Queue | None = None,
) -> Array:
    """``empty_like`` filled with ones."""
    return full_like(prototype, 1, dtype, device, shape=shape, queue=queue)


def full_like(
    prototype: Any, fill_value: Any, dtype: DTypeLike | None = None, device: Device | str | None = None, *,
    shape: Shape | None = None, queue: Queue | None = None,
) -> Array:
    """``empty_like`` filled with ``fill_value``."""
    dims, dt, dev, kind = _like(prototype, dtype, shape)
    out = empty(dims, dt, dev if device is None else device, kind)
    out.fill(fill_value, queue=queue)
    return out


def to_device(
    source: Any,
    device: Device | str | None = None,
    kind: AllocType | str = AllocType.DEVICE,
    *,
    queue: Queue | None = None,
    context: Context | None = None,
) -> Array:
    """A copy of ``source`` (a numpy array, anything ``numpy.asarray`` takes, or an Array) on
    ``device``, its memory owned by ``context`` (default: the platform's default context).

    Object arrays (Python references) are refused: INVALID_ARGUMENT naming the dtype.
    """
    np = _numpy()
    if isinstance(source, Array):
        out = empty(source.shape, source.dtype, device, kind, context=context)
        out.copy_from(source if source.is_contiguous else source.to_numpy(), queue=queue)
        return out
    host = np.asarray(source, order="C")
    as_dtype(np, host.dtype)
    out = empty(host.shape, host.dtype, device, kind, context=context)
    out.copy_from(host, queue=queue)
    return out


MAKERS.empty, MAKERS.to_device = empty, to_device  # (for Context.empty and to_device: see _makers)
