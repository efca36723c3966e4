"""Installs the compiled path: the per-call ol* functions that ``offload._compiled._fastpath`` compiles
(``_compiled._fastpath.COMPILED``) replace the generated Python functions, which each one keeps as its
fallback (``entry.fallback``) for every case off the common path. ``entry.counts`` says how
many calls each path made (tests use it to prove which ran)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import memory as _api_memory, queues as _api_queues
from .._core.allocations import AllocationMap
from .._values.errors import OffloadError, as_offload_error
from .._core.handles import Device, Event, Queue, Symbol
from .._core.native import ENABLED, _fastpath
from .._core.ranges import HOT
from .._core.session import STATE, Session
from .._values.types import KernelLaunchSizeArgs


def install(functions: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """``functions`` with the compiled ones in place (as is when the compiled path is off)."""
    if not ENABLED:  # (ENABLED: _fastpath was built)
        return functions
    _fastpath.configure(
        {
            "Device": Device,
            "Queue": Queue,
            "Symbol": Symbol,
            "Event": Event,
            "KernelLaunchSizeArgs": KernelLaunchSizeArgs,
            "Session": Session,
            "AllocationMap": AllocationMap,
            "STATE": STATE,
            "HOT": HOT,
            "OffloadError": OffloadError,
            "as_offload_error": as_offload_error,
            "partial": functools.partial,
            "run_host_function": _api_queues._run_host_function,
            "BIG_HOST_COPY": _api_memory._BIG_HOST_COPY,
        }
    )
    installed = dict(functions)
    for name in _fastpath.COMPILED:
        fallback = functions[name]
        entry = _fastpath.entry(name, fallback)
        functools.update_wrapper(entry, fallback)
        installed[name] = entry
    return installed
