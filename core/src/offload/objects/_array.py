"""``Array``: a typed view (shape, dtype, byte strides, offset) over a ``Buffer``; numpy and DLPack.

This is not an array library: an Array describes memory so that it can be copied to and from
numpy, handed to DLPack consumers (numpy views host-accessible memory without a copy) and passed
to kernels as a pointer. ``numpy`` is imported when an Array is made (the core does not need it).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from .._values.enums import AllocType, ErrorCode
from .._values.errors import OffloadError
from . import _arrayexport, _dlpack, _fill, _indexing
from ._arrayexport import DL_CODES
from ._rect import byte_span, c_strides, packed, rect_layout
from ._discovery import Device, as_device, host_device
from ._buffer import Buffer
from ._copies import fast_copy
from ._records import ARRAY_COPY_FROM, MemoryRecord, copying
from ._casting import cast_refused, check_casting, host_source
from ._memory import MemoryExports, as_dtype, as_kind, as_shape, as_size, copy_rect, dlpack_device, wrong_type
from ._makers import MAKERS

if TYPE_CHECKING:
    import numpy
    from numpy.typing import DTypeLike, NDArray

    from ._context import Context
    from ._queue import Queue
    from ._rect import RectLayout
else:
    DTypeLike = Any

_NUMPY_KINDS = {_dlpack.INT: "int", _dlpack.UINT: "uint", _dlpack.FLOAT: "float", _dlpack.COMPLEX: "complex"}


def _numpy() -> Any:
    try:
        import numpy  # here, not at the top: numpy is optional (offload-core imports without it)
    except ImportError:  # pragma: no cover - the test environment has numpy
        raise OffloadError(ErrorCode.UNSUPPORTED, "offload.Array needs numpy (pip install numpy)") from None
    return numpy


def new_array(
    dims: tuple[int, ...], dt: Any, device: Device | str | None, kind: AllocType | str, context: Context | None = None
) -> Array:
    """A new C-contiguous Array of shape ``dims`` and numpy dtype ``dt`` over a Buffer of its own
    (one byte at least) on ``device`` (None: the default device), owned by ``context``."""
    nbytes = dt.itemsize
    for n in dims:
        nbytes *= n
    buffer = Buffer(max(nbytes, 1), None if device is None else as_device(device), as_kind(kind), context=context)
    return Array(buffer, dims, dt)


class Array(MemoryRecord, MemoryExports):
    """A typed view of ``buffer``: ``shape``, ``dtype``, ``strides`` (bytes) from byte ``offset``."""

    __slots__ = ("_buffer", "_shape", "_dtype", "_strides", "_offset", "_nbytes", "_contiguous")

    def __init__(
        self,
        buffer: Buffer,
        shape: int | tuple[int, ...] | None = None,
        dtype: DTypeLike = "uint8",
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
    ) -> None:
        np = _numpy()
        if not isinstance(buffer, Buffer):
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"buffer must be an offload Buffer, got {type(buffer).__name__}")
        dt = as_dtype(np, dtype)
        offset = as_size(offset, "offset")
        if shape is None:
            if offset > buffer.size:
                raise OffloadError(ErrorCode.INVALID_SIZE, f"offset {offset} is past the {buffer.size}-byte buffer")
            shape = ((buffer.size - offset) // dt.itemsize,)
        dims = as_shape(shape)
        if strides is None:
            byte_strides = c_strides(dims, dt.itemsize)
        else:
            try:
                byte_strides = tuple(operator.index(s) for s in strides)
            except TypeError:
                raise wrong_type("strides", "a tuple of ints (bytes)", strides) from None
            if len(byte_strides) != len(dims):
                raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"strides {strides} do not match shape {dims}")
        low, high = byte_span(dims, byte_strides, dt.itemsize)
        if offset + low < 0 or offset + high > buffer.size:
            raise OffloadError(
                ErrorCode.INVALID_SIZE,
                f"a {dt} view of shape {dims}, strides {byte_strides} at offset {offset} "
                f"does not fit the {buffer.size}-byte buffer",
            )
        self._buffer = buffer
        self._shape = dims
        self._dtype = dt
        self._strides = byte_strides
        self._offset = offset
        self._nbytes = dt.itemsize
        for n in dims:
            self._nbytes *= n
        expected = c_strides(dims, dt.itemsize)
        self._contiguous = all(n <= 1 or s == e for n, s, e in zip(dims, byte_strides, expected))

    # --- description -------------------------------------------------------------------------

    @property
    def buffer(self) -> Buffer:
        return self._buffer

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> numpy.dtype[Any]:
        return self._dtype  # type: ignore[no-any-return]

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides, as numpy spells them."""
        return self._strides

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return int(self._dtype.itemsize)

    @property
    def nbytes(self) -> int:
        return self._nbytes  # type: ignore[no-any-return]

    @property
    def address(self) -> int:
        """The device address of the element at index 0 (what a kernel's pointer parameter gets)."""
        return self._buffer.address + self._offset

    @property
    def device(self) -> Device:
        return self._buffer.device

    @property
    def kind(self) -> AllocType:
        return self._buffer.kind

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements are C-contiguous (size-1 dimensions may have any stride)."""
        return self._contiguous

    def __eq__(self, other: object) -> bool:
        """Identity, not elementwise (no arithmetic here: compare ``to_numpy()`` copies): an Array
        equals only itself and never asks ``other`` (a numpy array would read the memory to
        compare; a launch compares argument tuples with ``==``, Kernel._memo)."""
        return self is other

    __hash__ = object.__hash__

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d offload.Array")
        return self._shape[0]

    # --- views, fills and copies ------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Array:
        """A view of the same memory by basic indexing (ints, slices with any step, ``...``,
        ``None``); an int for every axis gives a 0-d Array (``item()`` reads it). Integer-array
        and boolean indexing (copies in numpy) are refused: INVALID_ARGUMENT."""
        shape, strides, offset = _indexing.index_view(self._shape, self._strides, self._offset, key)
        return Array(self._buffer, shape, self._dtype, strides, offset)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a[key] = value``: a scalar fills the view (``fill``); an Array or anything numpy
        takes (broadcast to the view's shape) is copied into it (``copy_from``, synchronously,
        under its ``casting="same_kind"``)."""
        view = self[key]
        if isinstance(value, Array):
            view.copy_from(value)
            return
        np = _numpy()
        if np.ndim(value) == 0:
            view.fill(value)
            return
        try:
            host = np.broadcast_to(np.asarray(value), view._shape)
        except ValueError as error:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"cannot set a view of shape {view._shape}: {error}") from None
        view.copy_from(host)

    def reshape(self, *shape: Any) -> Array:
        """A view of a C-contiguous Array with another shape of the same size (one size may be
        -1); a strided view is refused (INVALID_ARGUMENT: reshape a ``copy()``)."""
        dims, strides = _indexing.reshaped(self._shape, self.itemsize, self._contiguous, shape)
        return Array(self._buffer, dims, self._dtype, strides, self._offset)

    def fill(self, value: Any, *, queue: Queue | None = None) -> None:
        """Set every element to ``value`` (converted as numpy's ``fill`` converts it) on the
        device: ``olMemFill``, and pitched copies for strided views (see ``_fill``)."""
        _fill.fill_array(_numpy(), self, value, queue)

    def copy(self, *, queue: Queue | None = None) -> Array:
        """A new C-contiguous Array with this view's elements, on the same device and of the same
        memory kind (copied on the device; a view that is not rows goes through the host)."""
        out = new_array(self._shape, self._dtype, self.device, self.kind)
        if self._contiguous or rect_layout(self._shape, self._strides, self.itemsize) is not None:
            out.copy_from(self, queue=queue)
        else:
            out.copy_from(self.to_numpy(queue=queue), queue=queue)
        return out

    def item(self) -> Any:
        """The one element of a size-1 Array as a Python scalar (a synchronous copy to the host)."""
        if self.size != 1:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"item() needs an Array of one element, not shape {self._shape}")
        return self.to_numpy().item()

    def __repr__(self) -> str:
        return (
            f"<offload.Array shape={self._shape} dtype={self._dtype} strides={self._strides} "
            f"{self.kind.name} on {self.device.id}>"
        )

    # --- numpy ---------------------------------------------------------------------------------

    def to_numpy(self, *, queue: Queue | None = None) -> NDArray[Any]:
        """A host copy as a numpy array of the same shape and dtype (C-contiguous).

        With ``queue`` the copy is enqueued: the array is complete once the queue is synchronised.
        A strided 2-D/3-D view of whole rows (``a[1:4, 2:6]``) is one pitched copy of just its
        rows (``olMemcpyRect``); other strided views copy their span and synchronise ``queue``.
        """
        np = _numpy()
        out = np.empty(self._shape, self._dtype)
        if self.is_contiguous:
            if out.nbytes:  # as bytes: datetimes and other dtypes lack a buffer-protocol format
                self._buffer.copy_to(out.reshape(-1).view(np.uint8), offset=self._offset, queue=queue)
            return out  # type: ignore[no-any-return]
        layout = rect_layout(self._shape, self._strides, self.itemsize)
        if layout is not None:  # rows of adjacent elements: only they are copied
            copy_rect(queue, out.ctypes.data, host_device(), packed(layout), self.address, self.device, layout, (out, self))
            return out  # type: ignore[no-any-return]
        low, high = byte_span(self._shape, self._strides, self.itemsize)
        raw = np.empty(high - low, np.uint8)
        self._buffer.copy_to(raw, offset=self._offset + low, queue=queue)
        if queue is not None:
            queue.sync()
        out[...] = np.ndarray(self._shape, self._dtype, buffer=raw, offset=-low, strides=self._strides)
        return out  # type: ignore[no-any-return]

    @copying(ARRAY_COPY_FROM, 2, destination=0, source=1, queue=2)  # (its verdicts replayed in C: _records)
    def copy_from(self, source: Any, *, queue: Queue | None = None, casting: str = "same_kind") -> None:
        """Copy a numpy array (or anything ``numpy.asarray`` takes) or an Array of the same shape
        into this view; a strided 2-D or 3-D view of rows (``rect_layout``) on either side, as
        ``a[1:4, 2:6]``, is copied with one pitched copy (``olMemcpyRect``), device to device too.

        A source of another dtype is converted as ``numpy.copyto`` converts it under ``casting``
        (``"same_kind"`` by default: float64 into float32 or int64 into int32, never a float into
        an int, whose NaN would become INT_MIN; ``"unsafe"`` converts anything numpy can). A
        refused conversion is an OffloadTypeError (INVALID_ARGUMENT) naming both dtypes; an Array
        of another dtype is converted on the host (a copy through numpy, after ``queue``'s work)."""
        if (
            source.__class__ is Array and self._contiguous and source._contiguous and source._dtype is self._dtype
            and source._shape == self._shape
            and fast_copy(self._buffer, self._offset, source._buffer, source._offset, self._nbytes, queue, (source, self),
                          (self, ARRAY_COPY_FROM, (self, source, queue, casting)))
        ):
            return  # the common case in one frame (see fast_copy); every other one is checked below
        np = _numpy()
        if casting != "same_kind":
            check_casting(casting)
        if isinstance(source, Array) and source.dtype != self._dtype:
            source = self._converted(np, source, casting, queue)
        strided_source = isinstance(source, Array) and not source.is_contiguous
        if not self.is_contiguous or strided_source:
            self._copy_rows(np, source, queue, casting)
            return
        if isinstance(source, Array):
            if source.shape != self._shape:
                raise OffloadError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"source {source.dtype}{list(source.shape)} does not match {self._dtype}{list(self._shape)}",
                )
            self._buffer.copy_from(source, offset=self._offset, queue=queue)
            return
        host = host_source(np, source, self._dtype, self._shape, casting)
        if host.nbytes:
            self._buffer.copy_from(host.reshape(-1).view(np.uint8), offset=self._offset, queue=queue)

    def _converted(self, np: Any, source: Array, casting: str, queue: Queue | None) -> NDArray[Any]:
        """An Array of another dtype as a host array of this one (``casting`` checked first, so a
        refused conversion copies nothing); ``queue``'s work is waited for."""
        if not np.can_cast(source.dtype, self._dtype, casting):
            raise cast_refused(source.dtype, self._dtype, casting)
        host = source.to_numpy(queue=queue)
        if queue is not None:
            queue.sync()
        return host_source(np, host, self._dtype, self._shape, casting)

    def _rows(self, what: str) -> RectLayout | None:
        """This view's pitched layout (None when C-contiguous); INVALID_ARGUMENT naming ``what``
        for a strided view that is not whole rows."""
        if self.is_contiguous:
            return None
        layout = rect_layout(self._shape, self._strides, self.itemsize)
        if layout is None:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT,
                f"{what} needs a C-contiguous Array or a 2-D/3-D view of whole rows, not strides {self._strides}",
            )
        return layout

    def _copy_rows(self, np: Any, source: Any, queue: Queue | None, casting: str) -> None:
        """One pitched copy from ``source`` (numpy, or an Array of this shape and dtype) where one
        side or both are strided views of rows."""
        dst_layout = self._rows("copy_from")
        if isinstance(source, Array):
            if source.shape != self._shape or source.dtype != self._dtype:
                raise OffloadError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"source {source.dtype}{list(source.shape)} must be C-contiguous and match {self._dtype}{list(self._shape)}",
                )
            src_layout, src, src_device = source._rows("the source"), source.address, source.device
            keep: Any = source
        else:
            host = host_source(np, source, self._dtype, self._shape, casting)
            src_layout, src, src_device, keep = None, host.ctypes.data, host_device(), host
        layout = dst_layout or src_layout
        assert layout is not None  # (one side is strided)
        dst = self._buffer.writable_address("dst") + self._offset
        copy_rect(queue, dst, self.device, dst_layout or packed(layout), src, src_device, src_layout or packed(layout), (keep, self))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray[Any]:
        """numpy conversion: a view of host-accessible memory (no copy), else a host copy.

        A view is a DLPack export (it counts in ``buffer.exports``); dtypes and strides DLPack
        cannot describe (structured, non-native byte order, strides not a multiple of the item
        size) are viewed through a byte export of the span. Read-only memory gives a read-only view.
        """
        np = _numpy()
        if self._buffer.host_accessible and copy is not True:
            out = self._numpy_view(np)
        elif copy is False:
            raise ValueError(f"{self!r} is not host-accessible: numpy needs a copy")
        else:
            out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def _numpy_view(self, np: Any) -> NDArray[Any]:
        if self._dlpack_code() is not None:
            return np.from_dlpack(self)  # type: ignore[no-any-return]
        low, high = byte_span(self._shape, self._strides, self.itemsize)
        raw = np.from_dlpack(Array(self._buffer, (high - low,), np.uint8, None, self._offset + low))
        return np.ndarray(self._shape, self._dtype, buffer=raw, offset=-low, strides=self._strides)  # type: ignore[no-any-return]

    def _dlpack_code(self) -> int | None:
        """The DLPack type code of this view, None where DLPack cannot describe it."""
        code = DL_CODES.get(self._dtype.kind)
        if code is None or not self._dtype.isnative or any(s % self.itemsize for s in self._strides):
            return None
        return code

    # --- DLPack and the CUDA array interface (_arrayexport) -------------------------------------

    def _dlpack(self, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """``__dlpack__`` (MemoryExports): a capsule of this view (zero-copy unless ``copy`` or another ``dl_device`` asks)."""
        return _arrayexport.dlpack(self, stream, max_version, dl_device, copy)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA array interface (version 3) of an Array on a CUDA device; the device's queues
        are synchronised first, so ``stream`` is None. Other devices: AttributeError."""
        return _arrayexport.cuda_array_interface(self)

    def _export(self, versioned: bool, copied: bool) -> Any:
        return _arrayexport.export(self, versioned, copied)


MAKERS.array = Array  # (for Buffer.view and _copies: see _makers)
