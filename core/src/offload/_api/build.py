"""``offload.build``: kernel source -> a program image for one device, by its backend's toolchain.

The backend's ``build_target`` / ``build_source`` hooks (``hookspecs``) do the compiling; this
module checks the arguments, caches images by (platform, target, source, options) for the process
and on disk across processes, and tells the build listeners (``add_build_listener``) about every
image it hands out, so a tool (a simulator's test fixture, a build log) can act on it without the
backend knowing.

The disk cache (``_values.diskcache.DiskCache``: private to the user, ``$OFFLOAD_BUILD_CACHE``, else
``offload-builds`` in the XDG cache folder; ``off`` turns it off) keys an image by the platform, the
backend's distribution and version, ``build_target`` (which names the compiler and its version),
the source, the options and ``offload_kernel.h``. A backend registered in the process (no
distribution, so no version to key by) is cached in memory only.
"""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._values.diskcache import DiskCache, cache_key
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
    origin: str = "compiled"  # "compiled" (by build_source now), "memory" or "disk" (a cache's)


BuildListener = Callable[[BuiltProgram], None]

_cache: dict[tuple[str, str, str, tuple[str, ...]], bytes] = {}
_disk = DiskCache("offload-builds", "OFFLOAD_BUILD_CACHE", ".img", "offload.build")
_header: list[bytes] = []  # offload_kernel.h, read once
_KERNEL_HEADER = pathlib.Path(__file__).resolve().parent.parent / "include" / "offload_kernel.h"
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
    """Forget every image cached in memory (the next ``build`` of each reads the disk cache, or
    compiles again)."""
    with _lock:
        _cache.clear()


def _disk_key(backend: str, key: tuple[str, str, str, tuple[str, ...]]) -> str:
    """The disk cache's key: the backend's distribution and version, the memory key, the header."""
    if not _header:
        _header.append(_KERNEL_HEADER.read_bytes())
    platform, target, source, opts = key
    return cache_key(platform, backend, target, source, "\0".join(opts), _header[0])


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
    passed to the compiler. Images are cached by platform, target, source and options, for the
    process and on disk for the next ones (the module docstring says where). Errors: ``COMPILE_FAILURE`` (details: the compiler's log), ``HOST_TOOL_NOT_FOUND``
    (no compiler), ``UNSUPPORTED`` (the backend cannot build from source), ``INVALID_DEVICE``.
    """
    if not isinstance(source, str):
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"build: source must be str, got {type(source).__name__}")
    handle = _device_handle(device)
    opts = _options(options)
    ctx = STATE.ctx  # (the handle's: checked above)
    span = getattr(ctx.tracer, "span", None) if ctx is not None else None
    if span is None:
        return _build(handle, source, opts, {})
    facts: dict[str, Any] = {"platform": handle.platform.name, "cache": "miss", "source_bytes": len(source.encode())}
    start = time.perf_counter_ns()
    try:
        return _build(handle, source, opts, facts)
    except OffloadError as error:
        facts["result"] = f"OL_ERRC_{error.code.name}"
        raise
    finally:  # the timeline's span of the build: a gap on the thread otherwise (tracers with spans only)
        span("offload.build", "build", start, time.perf_counter_ns(), facts)


_OUTCOME = {"memory": "hit", "disk": "disk", "compiled": "miss"}


def _build(handle: DeviceHandle, source: str, opts: tuple[str, ...], facts: dict[str, Any]) -> bytes:
    """``build``'s work; ``facts`` gets the target and the cache's outcome (hit, disk or miss)."""
    backend = handle.backend
    platform = handle.platform.name
    try:
        target = str(backend.build_target(handle.native))
    except Exception as exc:
        raise as_offload_error(exc, f"{platform}: build_target")
    facts["target"] = target
    key = (platform, target, source, opts)
    origin = "memory"
    with _lock:
        image = _cache.get(key)
    if image is None:
        status = backend.status
        disk_key = None if status.distribution is None else _disk_key(f"{status.distribution} {status.version}", key)
        image = None if disk_key is None else _disk.get(disk_key)
        origin = "disk"
        if image is None:
            try:
                image = bytes(backend.build_source(handle.native, source, list(opts)))
            except Exception as exc:
                raise as_offload_error(exc, f"{platform}: build_source")
            origin = "compiled"
            if disk_key is not None:
                _disk.put(disk_key, image)
        with _lock:
            _cache[key] = image
    facts["cache"] = _OUTCOME[origin]
    with _lock:
        listeners = list(_listeners)
    if listeners:
        built = BuiltProgram(platform, target, source, opts, image, origin)
        for listener in listeners:
            listener(built)
    return image
