"""Installs the compiled path: the per-call ol* functions that ``offload._compiled._fastpath`` compiles
(``_compiled._fastpath.COMPILED``) replace the generated Python functions, which each one keeps as its
fallback (``entry.fallback``) for every call no published verdict covers. ``entry.counts`` says
how many calls each path made (tests use it to prove which ran).

The extension reads only what ``_compiled.interface`` declares: it is configured here with that
declaration, the classes playing its roles, and the objects it reads."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._compiled import interface
from .._core.allocations import AllocationMap
from .._core.handles import Device, Queue, Symbol
from .._core.native import ENABLED, _fastpath
from .._core.session import STATE, Session
from .._values.errors import OffloadError, as_offload_error


def install(functions: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """``functions`` with the compiled ones in place (as is when the compiled path is off)."""
    if not ENABLED:  # (ENABLED: _fastpath was built)
        return functions
    _fastpath.configure(
        {
            **interface.declaration(),
            "types": {"session": Session, "allocation_map": AllocationMap, "device": Device, "queue": Queue, "symbol": Symbol},
            "objects": {"state": STATE, "hot": interface.HOT, "OffloadError": OffloadError, "as_offload_error": as_offload_error},
        }
    )
    installed = dict(functions)
    for name in _fastpath.COMPILED:
        fallback = functions[name]
        entry = _fastpath.entry(name, fallback)
        functools.update_wrapper(entry, fallback)
        installed[name] = entry
    return installed
