"""Loading the CUDA driver through cuda.bindings (imported here only, on first use).

``load()`` imports ``cuda.bindings.driver`` and calls ``cuInit``. It returns the driver module
and the visible device count, or raises ``DriverUnavailable`` with the reason (no libcuda, a
driver without devices); the backend then reports zero devices and keeps the reason.
"""

from __future__ import annotations

from typing import Any

from ._errors import raise_for

__all__ = ["DriverUnavailable", "check", "load"]

_CUDA_ERROR_NO_DEVICE = 100


class DriverUnavailable(Exception):
    """No usable CUDA driver (the reason is the message)."""


def load() -> tuple[Any, int]:
    """Import the bindings and initialise the driver; return ``(driver, device_count)``."""
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
