"""Memory of the object layer below ``Buffer``: sizes, shapes, dtypes and kinds as the layer
takes them, the DLPack device of each kind of memory, and the flat calls on a Buffer's memory
(its allocation, copies that keep their operands alive on a queue), and what Buffer and Array
hand on alike (``MemoryExports``). It imports no class of the layer: what it uses of a Device or a
Buffer is a protocol (``DeviceLike``, ``BufferLike``), of a Queue its record (``QueueRecord``,
which ``check_queue`` asks for)."""

from __future__ import annotations

import operator
from typing import Any, Protocol

from .._values.enums import AllocType, ErrorCode, PlatformBackend
from .._values.errors import OffloadError, OffloadTypeError
from .._api.flat import ContextHandle, DeviceHandle, QueueHandle
from .._api.flat import (
    olCreateQueue, olDestroyQueue, olMemAlloc, olMemAllocAligned, olMemAllocAlignedHost, olMemAllocAsync, olMemAllocHost,
    olMemcpy, olMemcpyRect, olMemFill, olSyncQueue,
)
from .._values.types import Rect
from . import _dlpack
from ._records import QueueRecord
from ._rect import RectLayout


class DeviceLike(Protocol):
    """What these functions use of an ``offload.objects.Device``: its flat handle."""

    @property
    def handle(self) -> DeviceHandle: ...


class BufferLike(Protocol):
    """What ``fill_range`` uses of an ``offload.objects.Buffer``."""

    _finalizer: Any  # (None: memory offload did not allocate)

    @property
    def _device(self) -> DeviceLike: ...

    def writable_address(self, what: str) -> int: ...


def as_size(value: Any, what: str) -> int:
    """``operator.index(value)`` as a non-negative size, INVALID_SIZE naming ``what`` otherwise (a
    bool is no size: ``offset=True`` is a mistake, not 1)."""
    try:
        if value.__class__ is bool:
            raise TypeError
        size = operator.index(value)
    except TypeError:
        raise OffloadTypeError(ErrorCode.INVALID_SIZE, f"{what} must be an integer, got {type(value).__name__}") from None
    if size < 0:
        raise OffloadError(ErrorCode.INVALID_SIZE, f"{what} must be non-negative, got {size}")
    return size


_KIND_NAMES = {kind.name.lower(): kind for kind in AllocType}


def as_kind(kind: Any) -> AllocType:
    """An ``AllocType`` from itself, its value, or its name in any case (``"managed"``)."""
    if kind.__class__ is AllocType:
        return kind
    if isinstance(kind, str):
        found = _KIND_NAMES.get(kind.strip().lower())
        if found is None:
            names = ", ".join(repr(n) for n in _KIND_NAMES)
            raise OffloadError(ErrorCode.INVALID_ENUMERATION, f"memory kind {kind!r} is not one of {names}")
        return found
    try:
        return AllocType(kind)
    except ValueError:
        raise OffloadError(ErrorCode.INVALID_ENUMERATION, f"memory kind {kind!r} is not an AllocType") from None


def host_readable(device: DeviceLike, kind: AllocType) -> bool:
    """Whether the host reads ``kind`` memory of ``device`` in place: all memory of the host
    platform, and HOST and MANAGED memory of every device (liboffload's ``ol_alloc_type_t``: both
    are "visible to the host"; each backend's MANAGED is: CUDA ``cuMemAllocManaged``, AMDGPU
    ``hipMallocManaged``, OpenCL fine-grained buffer SVM). Wider than ``Buffer.host_accessible``
    (what numpy views through DLPack), which DLPack's device types narrow: AMDGPU's and OpenCL's
    MANAGED memory has no host-readable DLPack type."""
    return kind is not AllocType.DEVICE or device.handle.platform.kind is PlatformBackend.HOST


def check_queue(queue: Any) -> None:
    """INVALID_QUEUE (an OffloadTypeError) unless ``queue`` is None or an ``offload.objects.Queue``."""
    if queue is not None and not isinstance(queue, QueueRecord):  # (the record of Queue alone)
        raise wrong_type("queue", "an offload.objects.Queue or None", queue, ErrorCode.INVALID_QUEUE)


def wrong_type(what: str, expected: str, value: Any, code: ErrorCode = ErrorCode.INVALID_ARGUMENT) -> OffloadTypeError:
    """The error for an argument ``what`` of the wrong type, naming ``expected`` and what it got."""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return OffloadTypeError(code, f"{what} must be {expected}, got {type(value).__name__} {shown}")


def dlpack_device(device: DeviceLike, kind: AllocType) -> tuple[int, int]:
    """The DLPack ``(device_type, device_id)`` of ``kind`` memory of ``device``."""
    backend = device.handle.platform.kind
    if backend is PlatformBackend.HOST:
        return (_dlpack.CPU, 0)
    if backend is PlatformBackend.CUDA:
        if kind is AllocType.HOST:
            return (_dlpack.CUDA_HOST, 0)
        return (_dlpack.CUDA_MANAGED if kind is AllocType.MANAGED else _dlpack.CUDA, device.handle.index)
    if backend is PlatformBackend.AMDGPU:
        return (_dlpack.ROCM_HOST, 0) if kind is AllocType.HOST else (_dlpack.ROCM, device.handle.index)
    if kind is AllocType.HOST:
        return (_dlpack.CPU, 0)
    if backend is PlatformBackend.LEVEL_ZERO:
        return (_dlpack.ONE_API, device.handle.index)
    return (_dlpack.EXT_DEV, device.handle.index)


def allocate(
    device: DeviceLike, kind: AllocType, size: int, alignment: int | None, context: ContextHandle | None, queue: Any = None
) -> int:
    """The flat allocation of ``size`` bytes: HOST memory (pinned) by olMemAllocHost, aligned
    memory by olMemAllocAligned(Host), in ``context`` when one is given; with a ``queue`` (an
    ``offload.objects.Queue`` of ``device``), DEVICE memory in its order by olMemAllocAsync."""
    if queue is not None:
        check_queue(queue)
        if alignment is not None or context is not None or queue._handle.device is not device.handle:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT,
                               "alloc(queue=...) allocates in the queue's context on its device, without alignment")  # fmt: skip
        return olMemAllocAsync(queue._handle, kind, size)
    extra = {} if context is None else {"context": context}
    if alignment is None:
        if kind is AllocType.HOST:
            return olMemAllocHost(device.handle, size, **extra)
        return olMemAlloc(device.handle, kind, size, **extra)
    if kind is AllocType.HOST:
        return olMemAllocAlignedHost(device.handle, size, alignment, **extra)
    return olMemAllocAligned(device.handle, kind, size, alignment, **extra)


def as_dtype(np: Any, dtype: Any) -> Any:
    """``numpy.dtype(dtype)``, refusing by name what device memory cannot hold faithfully."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as error:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"dtype {dtype!r}: {error}") from None
    if dt.hasobject:
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT,
            f"dtype {dt} holds Python object references, which cannot be copied to or kept in offload memory",
        )
    if dt.itemsize == 0:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"dtype {dt} has no size")
    return dt


def as_shape(shape: Any) -> tuple[int, ...]:
    """A shape (an int or a sequence of them) as a tuple of sizes, INVALID_SIZE naming the bad one."""
    if isinstance(shape, tuple | list):
        return tuple(as_size(n, f"shape[{i}]") for i, n in enumerate(shape))
    return (as_size(shape, "shape"),)


def fill_range(buffer: BufferLike, offset: int, pattern: bytes, size: int, queue: QueueRecord | None) -> None:
    """``olMemFill`` of ``size`` bytes of ``buffer`` from ``offset`` with ``pattern`` (``size`` a
    multiple of its length), synchronously or on ``queue`` (which keeps the Buffer alive)."""
    check_queue(queue)
    address = buffer.writable_address("fill") + offset
    if queue is not None:
        olMemFill(queue._handle, address, pattern, size)
        queue._inflight.append(buffer)  # (held until the queue's sync)
        return
    if buffer._finalizer is None and not buffer._device.handle.is_host:
        # memory offload did not allocate (a global variable, an import): a synchronous olMemFill
        # cannot tell its device, so the fill goes through a flat queue of this Buffer's device
        own = olCreateQueue(buffer._device.handle)
        try:
            olMemFill(own, address, pattern, size)
            olSyncQueue(own)
        finally:
            olDestroyQueue(own)
        return
    olMemFill(None, address, pattern, size)


def memcpy(
    queue: QueueRecord | None, dst: int, dst_device: DeviceLike, src: int, src_device: DeviceLike, nbytes: int, keep: Any
) -> None:
    """``olMemcpy``, keeping ``keep`` alive until ``queue`` is synchronised."""
    if queue is not None:
        check_queue(queue)
    if not nbytes:
        return
    if queue is None:
        olMemcpy(None, dst, dst_device.handle, src, src_device.handle, nbytes)
        return
    olMemcpy(queue._handle, dst, dst_device.handle, src, src_device.handle, nbytes)
    queue._inflight.append(keep)  # (held until the queue's sync)


def copy_rect(
    queue: QueueRecord | None, dst: int, dst_device: DeviceLike, dst_layout: RectLayout,
    src: int, src_device: DeviceLike, src_layout: RectLayout, keep: Any,
) -> None:
    """One ``olMemcpyRect`` of the (shared) extent; with a queue, ``keep`` stays alive until it is synchronised."""
    check_queue(queue)
    extent, dst_row, dst_slab = dst_layout
    _, src_row, src_slab = src_layout
    olMemcpyRect(
        None if queue is None else queue._handle,
        Rect(dst, dst_device.handle, (0, 0, 0), dst_row, dst_slab),
        Rect(src, src_device.handle, (0, 0, 0), src_row, src_slab),
        extent,
    )
    if queue is not None:
        queue._inflight.append(keep)  # (held until the queue's sync)


class MemoryExports:
    """How Buffer and Array hand their memory on, written once: ``__offload_ptr__`` (the address,
    for flat ``ol*`` calls that take a pointer: they keep the argument referenced while they run,
    so a temporary stays allocated for the call) and the DLPack protocol (``__dlpack__`` hands its
    arguments to the class's ``_dlpack``: an Array exports its view, a Buffer its bytes as one)."""

    __slots__ = ()

    @property
    def address(self) -> int:
        raise NotImplementedError

    @property
    def device(self) -> DeviceLike:
        raise NotImplementedError

    @property
    def kind(self) -> AllocType:
        raise NotImplementedError

    @property
    def __offload_ptr__(self) -> int:
        return self.address

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack_device(self.device, self.kind)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        return self._dlpack(stream, max_version, dl_device, copy)

    def _dlpack(self, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        raise NotImplementedError
