"""offload: LLVM liboffload's ``ol*`` API in Python, with backends found as plugins.

The functions keep their C names; out-parameters are return values, pointers are ``int``
addresses, handles are opaque objects made only by the API, and every failure raises
``OffloadError`` (``.code``: an ``ErrorCode``; ``.details``: the message). Backend authors read
``offload.hookspecs`` and write ``from offload import hookimpl``.

Two levels share some names. ``offload.Platform``, ``Device``, ``Queue``, ``Event``, ``Program``
and ``Symbol`` are the flat API's handle types (liboffload's ``ol_*_handle_t``), also spelled
``offload.DeviceHandle``, ``QueueHandle``, ...; the object layer's classes of those names live in
``offload.objects`` (``offload.objects.Queue``) and wrap a handle (``.handle``). So
``dev.queue()`` on an ``offload.objects.Device`` is an ``offload.objects.Queue``, not an
``offload.Queue``; its ``.handle`` is one. ``offload.Buffer``, ``Array`` and ``Kernel`` are object
layer classes (the flat API has no such handles).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .backend import build as build_support
from ._api.build import BuiltProgram, add_build_listener, build, clear_build_cache
from ._values.enums import (
    API_LEVELS,
    AllocType,
    ContextInfo,
    DeviceFpCapabilityFlag,
    DeviceInfo,
    DeviceType,
    ErrorCode,
    EventFlags,
    EventInfo,
    KernelLaunchPropType,
    MemInfo,
    MemMigrationFlag,
    MemoryRegisterFlag,
    PlatformBackend,
    PlatformInfo,
    QueueInfo,
    SymbolInfo,
    SymbolKind,
    c_constants,
)
from ._values.errors import OffloadError, OffloadTypeError, OffloadValueError
from ._trace.flush import flush_trace
from ._core.foreign import ForeignMemory, foreign_stream_sync, foreign_stream_wait, register_foreign_memory
from ._api.streams import adopt_stream, queue_stream
from ._api.flat import *  # noqa: F403 (olInit, olShutDown, the generated ol* functions, the handle types, the C constants)
from ._api.flat import __all__ as _flat_api_names
from ._core.handles import ContextHandle, DeviceHandle, EventHandle, PlatformHandle, ProgramHandle, QueueHandle, SymbolHandle
from ._core.registry import BackendStatus, OffloadBackendWarning, register_backend, unregister_backend
from ._core.session import backend_status
from ._trace.tracing import set_trace_logger
from ._values.types import Dimensions, InitArgs, KernelLaunchSizeArgs, KernelParam, Rect
from ._version import __version__ as __version__
from .backend.build import kernel_include_dir
from .backend.support import raise_kept_errors  # also offload.backend.support.raise_kept_errors
from .hookspecs import hookimpl

# The object layer is imported at its first use (module ``__getattr__``): ``import offload``
# and the flat API do not pay for it.
_OBJECT_LAYER = frozenset({
    "objects", "Array", "Buffer", "Kernel", "as_array", "default_device", "devices", "empty", "empty_like",
    "from_cuda_array_interface", "from_dlpack", "full", "full_like", "ones", "ones_like", "platforms",
    "to_device", "zeros", "zeros_like",
})

if TYPE_CHECKING:
    from . import objects
    from .objects import (
        Array,
        Buffer,
        Kernel,
        as_array,
        default_device,
        devices,
        empty,
        empty_like,
        from_cuda_array_interface,
        from_dlpack,
        full,
        full_like,
        ones,
        ones_like,
        platforms,
        to_device,
        zeros,
        zeros_like,
    )


if not TYPE_CHECKING:  # (hidden from type checkers: a typo such as offload.olMemAloc stays an error)

    def __getattr__(name: str) -> Any:
        """``offload.objects`` and the names re-exported from it, imported at first use."""
        if name not in _OBJECT_LAYER:
            raise AttributeError(f"module 'offload' has no attribute {name!r}")
        # deferred on purpose: the object layer loads when it is first used (import_module, not
        # ``from . import objects``, whose attribute test would call this function again)
        objects = importlib.import_module(f"{__name__}.objects")
        value = objects if name == "objects" else getattr(objects, name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    # the flat API: olInit, olShutDown, the generated ol* functions, the handle types, the C constants
    *_flat_api_names,
    # the handle types again, named as handles (offload.objects has classes named Device, Queue, ...)
    "PlatformHandle",
    "DeviceHandle",
    "ContextHandle",
    "QueueHandle",
    "EventHandle",
    "ProgramHandle",
    "SymbolHandle",
    # value types
    "Dimensions",
    "KernelLaunchSizeArgs",
    "KernelParam",
    "InitArgs",
    "Rect",
    # enums (API_LEVELS: olInit's levels; c_constants(level): the C numbers at a level)
    "API_LEVELS",
    "c_constants",
    "ContextInfo",
    "EventFlags",
    "KernelLaunchPropType",
    "MemMigrationFlag",
    "ErrorCode",
    "PlatformInfo",
    "PlatformBackend",
    "DeviceType",
    "DeviceInfo",
    "DeviceFpCapabilityFlag",
    "AllocType",
    "MemInfo",
    "MemoryRegisterFlag",
    "QueueInfo",
    "EventInfo",
    "SymbolKind",
    "SymbolInfo",
    # errors, backends, tracing
    "OffloadError",
    "raise_kept_errors",
    "OffloadBackendWarning",
    "BackendStatus",
    "backend_status",
    "register_backend",
    "unregister_backend",
    "hookimpl",
    "set_trace_logger",
    "flush_trace",
    # memory of other libraries
    "ForeignMemory",
    "register_foreign_memory",
    "foreign_stream_wait",
    "foreign_stream_sync",
    "adopt_stream",
    "queue_stream",
    # programs from source
    "build",
    "add_build_listener",
    "clear_build_cache",
    "BuiltProgram",
    "kernel_include_dir",
    "build_support",
    # the object layer (offload.objects holds the rest)
    "objects",
    "devices",
    "platforms",
    "default_device",
    "Buffer",
    "Array",
    "Kernel",
    "empty",
    "zeros",
    "ones",
    "full",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "to_device",
    "from_dlpack",
    "from_cuda_array_interface",
    "as_array",
]
