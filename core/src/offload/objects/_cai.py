"""Arrays from other libraries' objects: the CUDA array interface (versions 0-3, as Numba, CuPy
and PyTorch export it) and ``as_array``, which takes whatever protocol an object speaks."""

from __future__ import annotations

from typing import Any

from .._enums import AllocType, ErrorCode, PlatformBackend
from .._errors import OffloadError
from .._sessions import foreign_stream_sync
from . import _session
from ._array import Array, _numpy, byte_span, c_strides, from_dlpack, to_device
from ._buffer import Buffer
from ._discovery import Device, as_device, devices
from ._interop import foreign_buffer

__all__ = ["as_array", "from_cuda_array_interface"]


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
