"""An Array handed to other libraries: DLPack capsules (zero-copy, or a copy where asked) and the
CUDA array interface, each after the work queued on the array's device that the consumer must see."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from .._values.enums import AllocType, PlatformBackend
from . import _dlpack, _interop, _session
from ._buffer import Buffer
from ._discovery import Device, host_device
from ._rect import c_strides

if TYPE_CHECKING:
    from ._array import Array

DL_CODES = {"b": _dlpack.BOOL, "i": _dlpack.INT, "u": _dlpack.UINT, "f": _dlpack.FLOAT, "c": _dlpack.COMPLEX}
_live_queues: weakref.WeakSet[Any] = weakref.WeakSet()  # the layer's queues, synchronised by exports


def dlpack(array: Array, stream: Any, max_version: Any, dl_device: Any, copy: bool | None) -> Any:
    """``Array.__dlpack__``: a capsule of the view (zero-copy unless ``copy`` or another
    ``dl_device`` asks); ``stream`` (a consumer's) is ordered after the device's queued work."""
    device = array.__dlpack_device__()
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    if dl_device is not None and tuple(dl_device) != device:
        if tuple(dl_device) != (_dlpack.CPU, 0) or copy is False:
            raise BufferError(f"cannot export {array!r} to DLPack device {tuple(dl_device)} without a copy")
        return _export_host(type(array), array.to_numpy(), versioned, copied=True)
    if device[0] == _dlpack.CPU and stream not in (None, -1):
        raise BufferError(f"host memory takes stream=None, got {stream!r}")
    if stream != -1:
        if device[0] in _dlpack.HOST_ACCESSIBLE:  # the consumer may read it from the host
            sync_queues_of(array.device)
        else:  # the consumer's stream waits for the queued work (events), the host does not
            stream = _interop.consumer_stream(device[0] == _dlpack.CUDA, stream)
            _interop.order_before(stream, [q for q in list(_live_queues) if q.device == array.device])
    if copy:
        return export(array.copy(), versioned, copied=True)
    return export(array, versioned, copied=False)


def cuda_array_interface(array: Array) -> dict[str, Any]:
    """``Array.__cuda_array_interface__`` (version 3; strides where the view is not C-contiguous)."""
    buffer = array.buffer
    if buffer.device.platform.backend is not PlatformBackend.CUDA:
        raise AttributeError(f"{array!r} is not on a CUDA device: no __cuda_array_interface__")
    sync_queues_of(array.device)
    strides = None if array.strides == c_strides(array.shape, array.itemsize) else array.strides
    address = array.address if array.nbytes else buffer.address
    return _interop.cuda_array_interface(address, array.shape, array.dtype.str, strides, buffer.readonly)


def export(array: Array, versioned: bool, copied: bool) -> Any:
    """The DLPack capsule of ``array``'s memory (BufferError for what DLPack cannot describe)."""
    dtype = array.dtype
    code = DL_CODES.get(dtype.kind)
    if code is None or not dtype.isnative:
        raise BufferError(f"dtype {dtype} has no DLPack equivalent")
    itemsize = array.itemsize
    if any(s % itemsize for s in array.strides):
        raise BufferError(f"strides {array.strides} are not multiples of the item size {itemsize}")
    buffer = array.buffer
    if buffer.readonly and not versioned:
        raise BufferError(f"{array!r} is read-only: only a DLPack 1.0 consumer (max_version) can be told so")
    address = array.address if array.nbytes else buffer.address
    capsule = _dlpack.export(
        array,
        address,
        array.__dlpack_device__(),
        array.shape,
        tuple(s // itemsize for s in array.strides),
        (code, itemsize * 8),
        versioned,
        read_only=buffer.readonly,
        copied=copied,
    )
    _session.pin(buffer._ctx)
    return capsule


def _export_host(array_class: type[Array], host: Any, versioned: bool, copied: bool) -> Any:
    """Export a numpy array's memory (a host copy we made) as a CPU tensor (an ``array_class`` view of it)."""
    holder = Buffer.wrap(host.ctypes.data, max(host.nbytes, 1), host_device(), AllocType.HOST, owner=host)
    return export(array_class(holder, host.shape, host.dtype, host.strides), versioned, copied)


def sync_queues_of(device: Device) -> None:
    """Wait for the layer's queues of ``device`` (the host is about to read its memory)."""
    for queue in list(_live_queues):
        if queue.device == device and not queue.closed:
            queue.sync()


def register_queue(queue: Any) -> None:
    """Record one of the layer's queues (DLPack exports of its device wait for it)."""
    _live_queues.add(queue)
