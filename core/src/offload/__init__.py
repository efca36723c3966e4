"""offload: LLVM liboffload's ``ol*`` API in Python, with backends found as plugins.

The functions keep their C names; out-parameters are return values, pointers are ``int``
addresses, handles are opaque objects made only by the API, and every failure raises
``OffloadError`` (``.code``: an ``ErrorCode``; ``.details``: the message). Backend authors read
``offload.hookspecs`` and write ``from offload import hookimpl``.
"""

from __future__ import annotations

import atexit as _atexit
from typing import TYPE_CHECKING

from . import _enums
from ._api import finish_queued_work_at_exit as _finish_queued_work_at_exit
from ._entrypoints import generate as _generate
from ._entrypoints import olInit, olShutDown
from ._enums import (
    AllocType,
    DeviceFpCapabilityFlag,
    DeviceInfo,
    DeviceType,
    ErrorCode,
    EventInfo,
    MemInfo,
    MemoryRegisterFlag,
    PlatformBackend,
    PlatformInfo,
    QueueInfo,
    SymbolInfo,
    SymbolKind,
)
from ._errors import OffloadError
from ._handles import Device, Event, Platform, Program, Queue, Symbol
from ._registry import BackendStatus, OffloadBackendWarning, register_backend, unregister_backend
from ._runtime import STATE as _STATE
from ._tracing import set_trace_logger
from ._types import Dimensions, KernelLaunchSizeArgs, KernelParam
from ._version import __version__
from .backend_support import raise_kept_errors  # also offload.backend_support.raise_kept_errors
from .hookspecs import hookimpl


_api = _generate()
globals().update(_api)
_atexit.register(_finish_queued_work_at_exit)
globals().update(_enums.c_constants())

if TYPE_CHECKING:  # the generated functions and C constants, typed (generated: python -m offload._stubgen)
    from ._flat_api import *  # noqa: F403

from . import objects  # noqa: E402  (the object layer calls the functions generated above)
from .objects import Array, Buffer, Kernel, default_device, devices, empty, from_dlpack, platforms, to_device  # noqa: E402


def backend_status() -> list[BackendStatus]:
    """What happened to every discovered backend at the last fresh ``olInit`` (empty before one)."""
    return list(_STATE.last_statuses)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    # lifecycle and the generated ol* functions
    "olInit",
    "olShutDown",
    *_api,
    # value types and handles
    "Dimensions",
    "KernelLaunchSizeArgs",
    "KernelParam",
    "Platform",
    "Device",
    "Queue",
    "Event",
    "Program",
    "Symbol",
    # enums
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
    *_enums.c_constants(),
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
    # the object layer (offload.objects holds the rest)
    "objects",
    "devices",
    "platforms",
    "default_device",
    "Buffer",
    "Array",
    "Kernel",
    "empty",
    "to_device",
    "from_dlpack",
]
