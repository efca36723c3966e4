"""``offload.build``: kernel source -> a program image for one device, by its backend's toolchain.

The backend's ``build_target`` / ``build_source`` hooks (``hookspecs``) do the compiling; this
module checks the arguments, caches images by (platform, target, source, options) for the process,
and tells the build listeners (``add_build_listener``) about every image it hands out, so a tool
(a simulator's test fixture, a build log) can act on it without the backend knowing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError, as_offload_error
from .._core.handles import Device as DeviceHandle
from .._core.session import STATE

__all__ = ["BuiltProgram", "add_build_listener", "build", "clear_build_cache"]


@dataclass(frozen=True)
class BuiltProgram:
    """One image ``offload.build`` handed out, as its listeners see it."""

    platform: str  # the platform (backend) name
    target: str  # the backend's build_target for the device
    source: str
    options: tuple[str, ...]
    image: bytes


BuildListener = Callable[[BuiltProgram], None]

_cache: dict[tuple[str, str, str, tuple[str, ...]], bytes] = {}
_listeners: list[BuildListener] = []
_lock = threading.Lock()


def add_build_listener(listener: BuildListener) -> Callable[[], None]:
    """Call ``listener(BuiltProgram)`` for every image ``build`` returns from now on (cached ones
    too), before it returns it; an exception of a listener fails that build. Returns the function
    that removes the listener."""
    with _lock:
        _listeners.append(listener)

    def remove() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


def clear_build_cache() -> None:
    """Forget every cached image (the next ``build`` of each compiles again)."""
    with _lock:
        _cache.clear()


def _device_handle(device: Any) -> DeviceHandle:
    handle = getattr(device, "handle", device)  # an offload.objects.Device carries its handle
    if not isinstance(handle, DeviceHandle):
        raise OffloadError(ErrorCode.INVALID_DEVICE, f"build: device must be an offload device, got {device!r}")
    if handle._ctx is None or handle._ctx is not STATE.ctx:
        raise OffloadError(ErrorCode.INVALID_DEVICE, f"build: {handle!r} belongs to no live session (olInit first)")
    return handle


def _options(options: Sequence[str]) -> tuple[str, ...]:
    if isinstance(options, str | bytes) or not all(isinstance(o, str) for o in options):
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"build: options must be a sequence of str, got {options!r}")
    return tuple(options)


def build(source: str, device: Any, options: Sequence[str] = ()) -> bytes:
    """Compile kernel ``source`` for ``device`` (a flat device handle or an ``offload.objects.Device``)
    with its backend's toolchain; return the image, ready for ``olCreateProgram`` on that device.

    The host backend compiles C with the system compiler, CUDA C++ goes through NVRTC or nvcc for
    the device's compute capability, HIP through clang for the device's gfx target; sources written
    with ``offload_kernel.h`` (``OFFLOAD_PORTABLE_KERNEL``) build on all of them. ``options`` are
    passed to the compiler. Images are cached for the process by platform, target, source and
    options. Errors: ``COMPILE_FAILURE`` (details: the compiler's log), ``HOST_TOOL_NOT_FOUND``
    (no compiler), ``UNSUPPORTED`` (the backend cannot build from source), ``INVALID_DEVICE``.
    """
    if not isinstance(source, str):
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"build: source must be str, got {type(source).__name__}")
    handle = _device_handle(device)
    opts = _options(options)
    backend = handle.backend
    platform = handle.platform.name
    try:
        target = str(backend.build_target(handle.native))
    except Exception as exc:
        raise as_offload_error(exc, f"{platform}: build_target")
    key = (platform, target, source, opts)
    with _lock:
        image = _cache.get(key)
    if image is None:
        try:
            image = bytes(backend.build_source(handle.native, source, list(opts)))
        except Exception as exc:
            raise as_offload_error(exc, f"{platform}: build_source")
        with _lock:
            _cache[key] = image
    with _lock:
        listeners = list(_listeners)
    if listeners:
        built = BuiltProgram(platform, target, source, opts, image)
        for listener in listeners:
            listener(built)
    return image
