"""``Buffer``: one allocation owned by one object, freed by ``close()``, ``with`` or the GC."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from .._api.flat import ContextHandle
from .._api.flat import olMemFree, olMemFreeAsync, olMemPrefetch
from .._values.enums import AllocType, ErrorCode, MemMigrationFlag
from .._values.errors import OffloadError, OffloadValueError
from .._api.sessions import session_cell
from . import _dlpack, _session
from ._context import Context, context_handle
from ._discovery import Device, as_device
from ._makers import MAKERS
from ._memory import MemoryExports, allocate, as_kind, as_size, check_queue, dlpack_device, fill_range, memcpy, wrong_type
from ._release import Release
from ._copies import endpoint, fast_copy
from ._records import BUFFER_COPY_FROM, BUFFER_COPY_TO, STAMPS, MemoryRecord, QueueRecord, copying

if TYPE_CHECKING:
    from .._api.sessions import Session
    from numpy.typing import DTypeLike

    from ._array import Array
    from ._queue import Queue

_STATE = session_cell()


def _free(ctx: Session, address: int, context: ContextHandle | None) -> None:
    """The finalizer: free the allocation (checked against its ``context``) if its session is
    still live (a later one freed it)."""
    if _session.is_current(ctx):
        try:
            if context is None:
                olMemFree(address)
            else:
                olMemFree(address, context)
        except OffloadError:
            pass  # freed through the flat API meanwhile, or the session ended under us


class Buffer(MemoryRecord, MemoryExports):
    """``size`` bytes of ``kind`` memory on ``device`` (default: ``offload.default_device()``).

    The allocation is freed by ``close()``, by leaving a ``with`` block, or when the object is
    garbage-collected; a finalizer that runs after the session ended (``olShutDown``, interpreter
    exit) does nothing, since shutdown frees every allocation. ``__offload_ptr__`` and ``address``
    are the device address; copies take numpy arrays, any buffer-protocol object, other buffers
    and arrays, synchronously or on a ``Queue``. ``kind`` is an ``AllocType`` or its name
    (``"device"``, ``"host"``: pinned host memory by ``olMemAllocHost``, ``"managed"``);
    ``alignment`` (a power of two) asks for an address that is a multiple of it
    (``olMemAllocAligned``; UNSUPPORTED where the device cannot give it). ``context`` (a
    ``Context`` holding ``device``; default: the platform's default context) owns the memory: the
    Buffer keeps it alive and frees the memory with it (``olMemFree(ptr, context)``). With a
    ``queue``, DEVICE memory is allocated in the queue's order (``olMemAllocAsync``, the queue's
    device and context) and ``close(queue)`` frees it so (``olMemFreeAsync``), as cuda.core's
    ``Device.allocate(size, stream=)`` / ``Buffer.close(stream)`` do.

    While a DLPack export or numpy view of the memory lives, ``close()`` raises (as
    ``mmap.close()`` does with exports); a Buffer of an ended session (the final ``olShutDown``)
    raises OffloadError wherever its address is needed.
    """

    __slots__ = (
        "_address", "_size", "_device", "_kind", "_finalizer", "_keepalive", "_ctx", "_readonly", "_context",
        "__weakref__",
    )

    _address: int
    _size: int
    _device: Device
    _kind: AllocType
    _finalizer: Release | None  # (at exit the layer's olShutDown frees everything at once)
    _keepalive: Any
    _ctx: Session | None  # the session the memory belongs to (None: owned outside offload)
    _readonly: bool
    _context: Context | None  # the context made in (None: the default one, or memory owned elsewhere)

    def __init__(
        self,
        size: int,
        device: Device | str | None = None,
        kind: AllocType | str = AllocType.DEVICE,
        *,
        alignment: int | None = None,
        context: Context | None = None,
        queue: Queue | None = None,
    ) -> None:
        owner = None if context is None else context_handle(context)  # (a Context, or INVALID_CONTEXT)
        if context is not None:
            dev = context.device(device)
        else:  # (a Device as is: the common case without a call)
            dev = device if device.__class__ is Device else as_device(device if device is not None or queue is None else queue.device)
        alloc_type = kind if kind.__class__ is AllocType else as_kind(kind)
        ctx = _session.acquire()
        nbytes = size if size.__class__ is int and size >= 0 else as_size(size, "size")
        self._address = allocate(dev, alloc_type, nbytes, alignment, owner, queue)
        self._context = context
        self._size = nbytes
        self._device = dev
        self._kind = alloc_type
        self._keepalive = None
        self._ctx = ctx
        self._readonly = False
        self._finalizer = Release(self, _session.release_later, _free, ctx, self._address, owner)

    @classmethod
    def wrap(
        cls,
        address: int,
        size: int,
        device: Device | str | None,
        kind: AllocType | str,
        owner: Any = None,
        *,
        readonly: bool = False,
        session: Session | None = None,
    ) -> Buffer:
        """A non-owning Buffer over memory someone else owns (``owner`` is kept alive).

        ``readonly`` memory refuses every write through the layer (copies into it, fills, kernel
        parameters not declared ``const``); memory of a ``session`` goes stale with it.
        """
        self = cls.__new__(cls)
        try:
            if address.__class__ is bool:
                raise TypeError
            self._address = operator.index(address)
        except TypeError:
            raise wrong_type("address", "an int", address) from None
        if not 0 <= self._address < 1 << 64:
            raise OffloadValueError(ErrorCode.INVALID_ARGUMENT, f"address {self._address} is not a 64-bit address")
        self._size = as_size(size, "size")
        self._device = as_device(device)
        self._kind = as_kind(kind)
        self._keepalive = owner
        self._finalizer = None
        self._ctx = session
        self._readonly = bool(readonly)
        self._context = None
        return self

    # --- properties --------------------------------------------------------------------------

    @property
    def address(self) -> int:
        """The device address of the first byte (OffloadError once closed or its session ended)."""
        ctx = self._ctx
        if ctx is not None and ctx is not _STATE.ctx and not _session.is_current(ctx):  # (the live one: at once)
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, _session.stale_details(self, ctx))
        if not self._address and self._size:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{self!r} is closed")
        return self._address

    def writable_address(self, what: str) -> int:
        """``address``, INVALID_ARGUMENT naming ``what`` for read-only memory."""
        if self._readonly:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what}: {self!r} is read-only memory")
        return self.address

    @property
    def size(self) -> int:
        return self._size

    nbytes = size

    @property
    def device(self) -> Device:
        return self._device

    @property
    def kind(self) -> AllocType:
        return self._kind

    @property
    def context(self) -> Context | None:
        """The context owning the memory (the platform's default one for a Buffer made without a
        context); None for memory owned elsewhere (``Buffer.wrap``, imports, globals)."""
        if self._context is not None:
            return self._context
        return None if self._finalizer is None else self._device.platform.default_context

    @property
    def owns_memory(self) -> bool:
        """False for a view of memory owned elsewhere (``Buffer.wrap``, imported DLPack memory)."""
        return self._finalizer is not None

    @property
    def closed(self) -> bool:
        return not self._address and bool(self._size)

    @property
    def readonly(self) -> bool:
        """Whether the layer refuses writes (imported read-only DLPack memory)."""
        return self._readonly

    @property
    def exports(self) -> int:
        """How many DLPack exports and numpy views of this memory are alive (``close()`` refuses while any is)."""
        return _session.exports_of(self)

    @property
    def host_accessible(self) -> bool:
        """Whether the host can read and write this memory directly (numpy views it without a copy)."""
        return dlpack_device(self._device, self._kind)[0] in _dlpack.HOST_ACCESSIBLE

    # --- lifetime ----------------------------------------------------------------------------

    def close(self, queue: Queue | None = None) -> None:
        """Free the allocation now (idempotent), or with ``queue`` in its order (olMemFreeAsync:
        refused by every copy at once, given back once the queue's earlier work has finished). A
        non-owning buffer just drops its reference.

        OffloadError (INVALID_ARGUMENT) while exports of the memory are alive: drop the numpy
        views and DLPack consumers first.
        """
        if self._address and (live := _session.exports_of(self)):
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT,
                f"cannot close {self!r}: {live} DLPack export(s) or numpy view(s) of its memory are alive",
            )
        if queue is not None:
            check_queue(queue)
            finalizer = self._finalizer
            if finalizer is not None and finalizer.detach() is not None:  # (nothing to drain: no release deferred)
                address, self._address, self._keepalive = self._address, 0, None
                STAMPS.close()  # (its address may come back in another Buffer: every verdict dies)
                olMemFreeAsync(queue._handle, address)
                return
        self.invalidate()
        _session.exports_of(None)  # drop the exports' session reference if none is left

    def invalidate(self) -> None:
        """Free (or forget) the memory now, exports or not: the owner of a view's memory is gone."""
        finalizer = self._finalizer
        self._address = 0
        STAMPS.close()
        self._keepalive = None
        if finalizer is not None:
            finalizer()
            _session.drain()

    def __eq__(self, other: object) -> bool:
        """Identity: an Buffer equals only itself, and never asks ``other`` (a numpy array would
        read the memory to compare; a launch compares argument tuples with ``==``, Kernel._memo)."""
        return self is other

    __hash__ = object.__hash__

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._ctx is not None and not _session.is_current(self._ctx):
            state = "of an ended session"
        else:
            state = "closed" if self.closed else f"at {self._address:#x}"
        return f"<offload.Buffer {self._size} bytes {self._kind.name} on {self._device.id} {state}>"

    # --- copies ------------------------------------------------------------------------------

    @copying(BUFFER_COPY_FROM, 2, destination=0, source=1, queue=3)  # (its verdicts replayed in C: _records)
    def copy_from(self, src: Any, *, offset: int = 0, queue: Queue | None = None) -> None:
        """Copy all of ``src`` (a Buffer, a contiguous Array or any buffer-protocol object) to ``offset``."""
        if src.__class__ is Buffer and offset.__class__ is int:  # the common case, inline (see fast_copy)
            if fast_copy(self, offset, src, 0, src._size, queue, (src, self), (self, BUFFER_COPY_FROM, (self, src, offset, queue))):
                return
        src_address, nbytes, src_device, keep, offset = self._other_side(src, offset, "src")
        memcpy(queue, self.writable_address("dst") + offset, self._device, src_address, src_device, nbytes, (keep, self))

    @copying(BUFFER_COPY_TO, 2, destination=1, source=0, queue=3)  # (its verdicts replayed in C: _records)
    def copy_to(self, dst: Any, *, offset: int = 0, queue: Queue | None = None) -> None:
        """Fill all of ``dst`` (a Buffer, a contiguous Array or a writable buffer) from ``offset``."""
        if dst.__class__ is Buffer and offset.__class__ is int:
            if fast_copy(dst, 0, self, offset, dst._size, queue, (self, dst), (dst, BUFFER_COPY_TO, (self, dst, offset, queue))):
                return
        dst_address, nbytes, dst_device, keep, offset = self._other_side(dst, offset, "dst")
        memcpy(queue, dst_address, dst_device, self.address + offset, self._device, nbytes, (keep, self))

    def _other_side(self, other: Any, offset: Any, what: str) -> tuple[int, int, Device, Any, int]:
        """The general copy's other side: ``endpoint`` of ``other`` (``"src"``, or ``"dst"``: written),
        and ``offset`` in this buffer, checked to hold its bytes (INVALID_SIZE)."""
        address, nbytes, device, keep = endpoint(other, what == "dst", what)
        offset = offset if offset.__class__ is int and offset >= 0 else as_size(offset, "offset")
        if offset + nbytes > self._size:
            where = "to" if what == "src" else "from"
            raise OffloadError(
                ErrorCode.INVALID_SIZE, f"copying {nbytes} bytes {where} offset {offset} overruns the {self._size}-byte buffer"
            )
        return address, nbytes, device, keep, offset

    def to_bytes(self) -> bytes:
        """A synchronous copy of the whole buffer into host memory."""
        out = bytearray(self._size)
        self.copy_to(out)
        return bytes(out)

    def fill(self, pattern: Any, *, queue: Queue | None = None) -> None:
        """Fill the buffer with the repeated bytes of ``pattern`` (bytes-like, or a numpy scalar)."""
        try:
            data = pattern if pattern.__class__ is bytes else memoryview(pattern).tobytes()
        except TypeError:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT, f"pattern must be bytes-like or a numpy scalar, got {type(pattern).__name__}"
            ) from None
        fill_range(self, 0, data, self._size, queue)

    def prefetch(self, queue: Queue, *, to_host: bool = False) -> None:
        """Hint that the memory moves to the queue's device (or, ``to_host``, to the host) in
        queue order (``olMemPrefetch``; a device without prefetch ignores it)."""
        if not isinstance(queue, QueueRecord):  # (the record of Queue alone)
            raise wrong_type("queue", "an offload.objects.Queue", queue, ErrorCode.INVALID_QUEUE)
        flags = MemMigrationFlag.DEVICE_TO_HOST if to_host else MemMigrationFlag.HOST_TO_DEVICE
        olMemPrefetch(queue._handle, [self.address], [self._size], flags)
        queue._hold(self)

    # --- typed views and DLPack --------------------------------------------------------------

    def view(
        self,
        dtype: DTypeLike = "uint8",
        shape: int | tuple[int, ...] | None = None,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
    ) -> Array:
        """A typed array view of this buffer (``strides`` in bytes; default C-contiguous, filling it)."""
        return MAKERS.array(self, shape, dtype, strides, offset)

    def _dlpack(self, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """``__dlpack__`` (MemoryExports): the whole buffer as a 1-D uint8 DLPack tensor."""
        return self.view()._dlpack(stream, max_version, dl_device, copy)


MAKERS.buffer = Buffer  # (for Device.alloc and _copies: see _makers)
