"""Arrays from other libraries' objects: DLPack (``from_dlpack``), the CUDA array interface
(versions 0-3, as Numba, CuPy and PyTorch export it) and ``as_array``, which takes whatever
protocol an object speaks."""

from __future__ import annotations

import weakref
from typing import Any

from .._values.enums import AllocType, ErrorCode, PlatformBackend
from .._values.errors import OffloadError
from .._api.sessions import foreign_stream_sync, register_foreign_memory
from . import _dlpack, _session
from ._array import _NUMPY_KINDS, Array, _numpy
from ._creation import to_device
from ._rect import byte_span, c_strides
from ._buffer import Buffer
from ._discovery import Device, as_device, devices, host_device

__all__ = ["as_array", "from_cuda_array_interface", "from_dlpack"]


def foreign_buffer(address: int, size: int, device: Device, kind: AllocType, owner: Any, readonly: bool) -> Buffer:
    """A non-owning Buffer over memory a producer keeps alive through ``owner``; memory of a
    non-host device is registered with the core (``register_foreign_memory``) while the Buffer lives,
    so copies and fills accept it."""
    holder = Buffer.wrap(address, size, device, kind, owner=owner, readonly=readonly)
    if not device.is_host:
        registration = register_foreign_memory(device.handle, address, size)
        if registration.registered:
            # a finalizer may run inside a copy's hold: release keeps `owner` (the producer's
            # memory) until the copies that checked the range before have ended, and returns at once
            weakref.finalize(holder, registration.release, owner, False)
    return holder


def _device_for(device_type: int, device_id: int) -> tuple[Device, AllocType]:
    """The offload device and memory kind of a DLPack device."""
    backends = {
        _dlpack.CUDA: (PlatformBackend.CUDA, AllocType.DEVICE),
        _dlpack.CUDA_HOST: (PlatformBackend.CUDA, AllocType.HOST),
        _dlpack.CUDA_MANAGED: (PlatformBackend.CUDA, AllocType.MANAGED),
        _dlpack.ROCM: (PlatformBackend.AMDGPU, AllocType.DEVICE),
        _dlpack.ROCM_HOST: (PlatformBackend.AMDGPU, AllocType.HOST),
    }
    if device_type == _dlpack.CPU:
        return host_device(), AllocType.HOST
    if device_type in backends:
        backend, kind = backends[device_type]
        found = devices(backend=backend)
        index = 0 if kind is AllocType.HOST else device_id
        if index < len(found):
            return found[index], kind
        if device_type in _dlpack.HOST_ACCESSIBLE:
            return host_device(), AllocType.HOST
        raise BufferError(f"no {backend.name} device {device_id} for DLPack device type {device_type}")
    raise BufferError(f"DLPack device type {device_type} has no offload backend")


def from_dlpack(source: Any, device: Device | str | None = None, *, copy: bool | None = None) -> Array:
    """An Array over a DLPack producer's memory (numpy, CuPy, torch, another offload Array, ...).

    Zero-copy unless ``copy=True`` or ``device`` names another device than the producer's
    (``copy=False`` then raises ``BufferError``). A producer's read-only flag is kept: the
    zero-copy Array refuses writes (``Buffer.readonly``); a copy is writable. numpy arrays and other buffer-protocol
    objects that lack ``__dlpack__`` are taken through ``numpy.asarray``.
    """
    np = _numpy()
    _session.acquire()
    if not hasattr(source, "__dlpack__") and type(source).__name__ != "PyCapsule":
        source = np.asarray(source)
    imported = _dlpack.consume(source)
    if imported.lanes != 1:
        raise BufferError(f"DLPack tensors with {imported.lanes} lanes are not supported")
    if imported.code == _dlpack.BOOL and imported.bits == 8:
        dtype = np.dtype(bool)
    elif imported.code in _NUMPY_KINDS:
        dtype = np.dtype(f"{_NUMPY_KINDS[imported.code]}{imported.bits}")
    else:
        raise BufferError(f"DLPack dtype code {imported.code} ({imported.bits} bits) has no numpy equivalent")
    src_device, kind = _device_for(imported.device_type, imported.device_id)
    shape = imported.shape
    itemsize = dtype.itemsize
    if imported.strides is None:
        byte_strides = c_strides(shape, itemsize)
    else:
        byte_strides = tuple(s * itemsize for s in imported.strides)
    low, high = byte_span(shape, byte_strides, itemsize)
    holder = foreign_buffer(
        imported.address + low, max(high - low, 1), src_device, kind, imported.owner, imported.read_only
    )
    view = Array(holder, shape, dtype, byte_strides, -low)
    target = src_device if device is None else as_device(device)
    if target == src_device and not copy:
        return view
    if copy is False:
        raise BufferError(f"taking {view!r} to {target.id} needs a copy (copy=False)")
    if not view.is_contiguous:
        if not holder.host_accessible:
            raise BufferError("a strided tensor in device memory cannot be copied; make it contiguous first")
        return to_device(np.from_dlpack(view), target)
    return to_device(view, target)


def _bad(what: str) -> OffloadError:
    return OffloadError(ErrorCode.INVALID_ARGUMENT, f"__cuda_array_interface__: {what}")


def _cuda_device(device: Device | str | None) -> Device:
    if device is not None:
        found = as_device(device)
        if found.platform.backend is not PlatformBackend.CUDA:
            raise OffloadError(ErrorCode.INVALID_DEVICE, f"{found.id} is not a CUDA device")
        return found
    cuda = devices(backend=PlatformBackend.CUDA)
    if not cuda:
        raise OffloadError(ErrorCode.INVALID_DEVICE, "a CUDA array interface needs a CUDA device (none is loaded)")
    return cuda[0]


def from_cuda_array_interface(source: Any, device: Device | str | None = None, *, copy: bool | None = None) -> Array:
    """An Array over an object's ``__cuda_array_interface__`` memory (or the dictionary itself).

    ``device`` is the CUDA device the pointer belongs to (the interface does not say; default: the
    first CUDA device). A ``stream`` in the interface (version 3) is synchronised before the Array
    is made, as the interface asks of a consumer; a ``mask`` is refused. The memory is registered
    with the core for the Array's lifetime (copies and fills accept it) and ``source`` is kept
    alive. Zero-copy unless ``copy=True`` (a copy on the same device).
    """
    np = _numpy()
    _session.acquire()
    cai = source if isinstance(source, dict) else getattr(source, "__cuda_array_interface__", None)
    if not isinstance(cai, dict):
        raise _bad(f"{type(source).__name__} has none")
    version = cai.get("version")
    if not isinstance(version, int) or not 0 <= version <= 3:
        raise _bad(f"version {version!r} (want 0 to 3)")
    if cai.get("mask") is not None:
        raise _bad("masked arrays are not supported")
    try:
        shape = tuple(int(n) for n in cai["shape"])
        dtype = np.dtype(cai["typestr"])
        address, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(f"malformed ({type(exc).__name__}: {exc})") from None
    if any(n < 0 for n in shape):
        raise _bad(f"negative extent in shape {shape}")
    strides = cai.get("strides")
    byte_strides = c_strides(shape, dtype.itemsize) if strides is None else tuple(int(s) for s in strides)
    if len(byte_strides) != len(shape):
        raise _bad(f"strides {byte_strides} do not match shape {shape}")
    target = _cuda_device(device)
    stream = cai.get("stream") if version >= 3 else None
    if stream is not None:
        if stream == 0:
            raise _bad("stream 0 is disallowed (ambiguous; the interface's rule)")
        foreign_stream_sync(target.handle, stream)
    low, high = byte_span(shape, byte_strides, dtype.itemsize)
    if address is None or int(address) == 0:
        if high > low:
            raise _bad("NULL data for a non-empty array")
        return Array(Buffer(1, target, AllocType.DEVICE), shape, dtype)
    holder = foreign_buffer(int(address) + low, max(high - low, 1), target, AllocType.DEVICE, source, bool(readonly))
    view = Array(holder, shape, dtype, byte_strides, -low)
    return to_device(view if view.is_contiguous else view.to_numpy(), target) if copy else view


def as_array(source: Any, device: Device | str | None = None, *, copy: bool | None = None) -> Array:
    """``source`` as an Array, by the protocol it speaks: an Array itself (a copy when ``copy`` or
    another ``device`` asks), DLPack (``from_dlpack``), the CUDA array interface
    (``from_cuda_array_interface``), else anything numpy takes (a copy onto ``device``)."""
    if isinstance(source, Array):
        if (device is None or as_device(device) == source.device) and not copy:
            return source
        return to_device(source if source.is_contiguous else source.to_numpy(), device or source.device)
    if hasattr(source, "__dlpack__"):
        return from_dlpack(source, device, copy=copy)
    if hasattr(source, "__cuda_array_interface__"):
        return from_cuda_array_interface(source, device, copy=copy)
    return from_dlpack(source, device, copy=copy)
