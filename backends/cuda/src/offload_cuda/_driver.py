"""Loading the CUDA driver through cuda.bindings (imported here only, on first use), and the one
place that knows the differences between cuda.bindings 12.x and 13.x and what each needs of the
driver.

``load()`` first looks for the driver library the way cuda.bindings will (cuda-pathfinder's
system search for a driver library: ``dlopen("libcuda.so.1")`` through the dynamic loader, so
``LD_LIBRARY_PATH`` and the ld.so cache decide), and only when it exists imports
``cuda.bindings.driver`` (~60 ms). It asks the driver's version (``cuDriverGetVersion``, which
needs no ``cuInit`` and has one ABI in every CUDA) *before any other call*, refuses a driver too old
for the bindings or for a call the backend makes (``DriverTooOld``: ``OL_ERRC_UNSUPPORTED``, naming
the versions and the missing calls), then calls ``cuInit``. It returns the driver module (bindings
13's names; ``adapt``) and the visible device count, or raises ``DriverUnavailable`` with the
reason (no libcuda, a driver without devices); the backend then reports zero devices and keeps the
reason.

Why the version first: bindings 13 resolve every entry point at the CUDA 13 ABI they were built
for (``cuGetProcAddress(name, 13000, ...)`` for ``cuCtxGetDevice``, ``cuCtxSynchronize``, ...);
NVIDIA documents that they need a 13.0 driver (R580, 580.65.06 or newer). Bindings 12 run on any
12.x or 13.x driver, but the backend's calls arrived during 12.x (``REQUIRED_CALLS``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import types
from typing import Any

from offload import ErrorCode, OffloadError
from offload.backend.support import DriverResults

from ._errors import raise_for

__all__ = [
    "DRIVER_LIBRARY",
    "REQUIRED_CALLS",
    "DriverTooOld",
    "DriverUnavailable",
    "adapt",
    "bindings_major",
    "check",
    "ready",
    "find_driver",
    "load",
    "version_text",
    "version_problem",
]

_CUDA_ERROR_NO_DEVICE = 100

#: The driver library's name per platform, as cuda-pathfinder's descriptor for ``"cuda"`` has it.
DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"

#: The driver calls of this backend introduced after CUDA 12.0, with the CUDA version (as
#: ``cuDriverGetVersion`` reports it) that introduced each (CUDA Driver API reference of that
#: release). Every other call it makes exists in every 12.x driver.
REQUIRED_CALLS: dict[str, int] = {
    "cuMemPrefetchAsync_v2": 12020,  # the CUmemLocation form (CUDA 13 calls it cuMemPrefetchAsync)
    "cuFuncGetName": 12030,
    "cuFuncGetParamInfo": 12040,
    "cuModuleGetFunctionCount": 12040,
    "cuModuleEnumerateFunctions": 12040,
}

#: The driver each bindings major needs: 13 -> CUDA 13.0 (NVIDIA's cuda-bindings 13 release notes:
#: a driver of 580.65.06 or newer); 12 -> what ``REQUIRED_CALLS`` need.
_BINDINGS_NEED = {13: (13000, "R580, 580.65.06 or newer"), 12: (max(REQUIRED_CALLS.values()), "R550 or newer")}

#: The oldest 12.x bindings whose blocking calls release the GIL (12.8.0 and 12.9.0 hold it in
#: ``cuStreamSynchronize``, measured: a host function that needs the GIL never runs).
_OLDEST_12 = (12, 9, 1)

#: Bindings 13's name -> bindings 12's name for the same driver entry point (CUDA 13 made the
#: later ABI the plain name). The backend speaks bindings 13's names only.
_RENAMED_IN_13 = {
    "cuMemPrefetchAsync": "cuMemPrefetchAsync_v2",  # (ptr, size, CUmemLocation, flags, stream)
    "cuDeviceGetUuid": "cuDeviceGetUuid_v2",  # the UUID of a MIG instance too
    "cuCtxCreate": "cuCtxCreate_v4",  # (CUctxCreateParams or None, flags, device)
}


class DriverUnavailable(Exception):
    """No usable CUDA driver (the reason is the message)."""


class DriverTooOld(OffloadError):
    """The driver is older than the bindings or the backend's calls need, or the bindings are a
    release the backend refuses (``OL_ERRC_UNSUPPORTED``); ``init`` raises it, so ``offload
    backends`` shows it as the reason the backend was skipped."""

    def __init__(self, details: str) -> None:
        super().__init__(ErrorCode.UNSUPPORTED, details)


def version_text(version: int) -> str:
    """``12080`` -> ``"12.8"``."""
    return f"{version // 1000}.{version % 1000 // 10}"


def bindings_major(version: str) -> int:
    """The major of a cuda.bindings version string (``"12.8.0"`` -> 12)."""
    return int(version.split(".", 1)[0])


def _release(version: str) -> tuple[int, ...]:
    """``"12.9.1"`` -> ``(12, 9, 1)`` (a suffix such as ``.post1`` or ``rc1`` ends the numbers)."""
    numbers = []
    for part in version.split(".")[:3]:
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def version_problem(driver_version: int, bindings_version: str) -> str | None:
    """Why a driver reporting ``driver_version`` cannot serve this backend on cuda.bindings
    ``bindings_version``, or None when it can."""
    major = bindings_major(bindings_version)
    need = _BINDINGS_NEED.get(major)
    if need is None:
        return f"cuda.bindings {bindings_version} is not a major this backend supports (12 or 13)"
    if major == 12 and _release(bindings_version) < _OLDEST_12:
        return (
            f"cuda.bindings {bindings_version} holds the GIL in blocking driver calls (cuStreamSynchronize), so a "
            f"Python host function deadlocks the process; offload-cuda needs cuda-bindings "
            f"{'.'.join(map(str, _OLDEST_12))} or newer"
        )
    have = version_text(driver_version)
    if major >= 13 and driver_version < need[0]:
        return (
            f"cuda.bindings {bindings_version} needs a CUDA {version_text(need[0])} driver ({need[1]}); this driver is "
            f"CUDA {have} (cuDriverGetVersion {driver_version}): install offload-cuda[cu12] (cuda-bindings 12.x) "
            "or a newer driver"
        )
    missing = [f"{call} (CUDA {version_text(v)})" for call, v in REQUIRED_CALLS.items() if v > driver_version]
    if missing:
        return (
            f"the CUDA {have} driver (cuDriverGetVersion {driver_version}) lacks {', '.join(missing)}; "
            f"offload-cuda needs a CUDA {version_text(need[0])} driver ({need[1]})"
        )
    return None


def adapt(driver: types.ModuleType, bindings_version: str) -> types.ModuleType:
    """The driver module under bindings 13's names: bindings 13 itself, or for 12 a module whose
    namespace is the bindings' with ``_RENAMED_IN_13`` applied (plain attribute lookups, as fast
    as the module's own)."""
    if bindings_major(bindings_version) >= 13:
        return driver
    adapted = types.ModuleType(driver.__name__, driver.__doc__)
    adapted.__dict__.update(driver.__dict__)
    for name, old in _RENAMED_IN_13.items():
        setattr(adapted, name, getattr(driver, old))
    return adapted


def find_driver() -> None:
    """Load the driver library by name (as cuda.bindings will, with the same mode) or raise
    ``DriverUnavailable`` naming it; the bindings then find it already loaded."""
    mode = getattr(os, "RTLD_NOW", 0) | getattr(os, "RTLD_GLOBAL", 0)
    try:
        ctypes.CDLL(DRIVER_LIBRARY, mode=mode)
    except OSError as exc:
        raise DriverUnavailable(f"no CUDA driver: {DRIVER_LIBRARY} cannot be loaded ({exc})") from exc


def load() -> tuple[Any, int]:
    """Find the driver library, import the bindings, check the driver's version, initialise the
    driver; return ``(driver, device_count)``."""
    find_driver()
    try:
        import cuda.bindings
        from cuda.bindings import driver
    except ImportError as exc:  # pragma: no cover - cuda-bindings is a dependency
        raise DriverUnavailable(f"cuda.bindings is not importable: {exc}") from exc
    bindings_version = str(getattr(cuda.bindings, "__version__", "0"))
    try:
        result, version = driver.cuDriverGetVersion()
    except RuntimeError as exc:  # cuda.pathfinder's DynamicLibNotFoundError, or no cuGetProcAddress
        raise DriverUnavailable(f"no CUDA driver: {exc}") from exc
    if int(result) != 0:
        raise_for(driver, result, "cuDriverGetVersion")
    problem = version_problem(int(version), bindings_version)
    if problem is not None:
        raise DriverTooOld(problem)
    (result,) = driver.cuInit(0)
    if int(result) == _CUDA_ERROR_NO_DEVICE:
        raise DriverUnavailable("the CUDA driver reports no device (CUDA_ERROR_NO_DEVICE)")
    if int(result) != 0:
        raise_for(driver, result, "cuInit")
    result, count = driver.cuDeviceGetCount()
    if int(result) != 0:
        raise_for(driver, result, "cuDeviceGetCount")
    return adapt(driver, bindings_version), int(count)


#: ``check(driver, returned, call)``: unpack a bindings result tuple ``(CUresult, *values)``, raising
#: on failure; ``ready(driver, returned, call)``: a query's answer (CUDA_ERROR_NOT_READY: False).
_RESULTS = DriverResults(raise_for, not_ready=600)
check = _RESULTS.check
ready = _RESULTS.ready
