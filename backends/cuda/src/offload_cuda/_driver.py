"""Loading the CUDA driver through cuda.bindings (imported here only, on first use).

``load()`` first looks for the driver library the way cuda.bindings will (cuda-pathfinder's
system search for a driver library: ``dlopen("libcuda.so.1")`` through the dynamic loader, so
``LD_LIBRARY_PATH`` and the ld.so cache decide), and only when it exists imports
``cuda.bindings.driver`` (~60 ms) and calls ``cuInit``. It returns the driver module and the
visible device count, or raises ``DriverUnavailable`` with the reason (no libcuda, a driver
without devices); the backend then reports zero devices and keeps the reason.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from ._errors import raise_for

__all__ = ["DRIVER_LIBRARY", "DriverUnavailable", "check", "find_driver", "load"]

_CUDA_ERROR_NO_DEVICE = 100

#: The driver library's name per platform, as cuda-pathfinder's descriptor for ``"cuda"`` has it.
DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


class DriverUnavailable(Exception):
    """No usable CUDA driver (the reason is the message)."""


def find_driver() -> None:
    """Load the driver library by name (as cuda.bindings will, with the same mode) or raise
    ``DriverUnavailable`` naming it; the bindings then find it already loaded."""
    mode = getattr(os, "RTLD_NOW", 0) | getattr(os, "RTLD_GLOBAL", 0)
    try:
        ctypes.CDLL(DRIVER_LIBRARY, mode=mode)
    except OSError as exc:
        raise DriverUnavailable(f"no CUDA driver: {DRIVER_LIBRARY} cannot be loaded ({exc})") from exc


def load() -> tuple[Any, int]:
    """Find the driver library, import the bindings and initialise the driver; return
    ``(driver, device_count)``."""
    find_driver()
    try:
        from cuda.bindings import driver
    except ImportError as exc:  # pragma: no cover - cuda-bindings is a dependency
        raise DriverUnavailable(f"cuda.bindings is not importable: {exc}") from exc
    try:
        (result,) = driver.cuInit(0)
    except RuntimeError as exc:  # cuda.pathfinder's DynamicLibNotFoundError, or no cuGetProcAddress
        raise DriverUnavailable(f"no CUDA driver: {exc}") from exc
    if int(result) == _CUDA_ERROR_NO_DEVICE:
        raise DriverUnavailable("the CUDA driver reports no device (CUDA_ERROR_NO_DEVICE)")
    if int(result) != 0:
        raise_for(driver, result, "cuInit")
    result, count = driver.cuDeviceGetCount()
    if int(result) != 0:
        raise_for(driver, result, "cuDeviceGetCount")
    return driver, int(count)


def check(driver: Any, returned: Any, call: str) -> Any:
    """Unpack a bindings result tuple ``(CUresult, *values)``: raise on failure, else the value(s)."""
    result = returned[0]
    if result:
        raise_for(driver, result, call)
    if len(returned) == 1:
        return None
    return returned[1] if len(returned) == 2 else returned[1:]
