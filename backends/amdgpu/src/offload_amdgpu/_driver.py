"""Loading the HIP runtime through hip-python (imported here only, on first use), and the one
result check of every HIP call (``check``, ``ready``: ``offload.backend.support.DriverResults``).

hip-python imports without a runtime and dlopens ``libamdhip64.so`` at its first call; a missing
library is a plain ``RuntimeError``. Importing hip-python costs ~80 ms, so ``load()`` first opens
the runtime library itself, by the path hip-python would use (its
``rocm.bindings.util.paths.get_library_path``: bundled, rocm_sdk, ``ROCM_PATH``, then the bare
name through the dynamic loader and ``LD_LIBRARY_PATH``; the bare name on hip-python lines
without it), and imports hip-python only when the library exists. ``load()`` returns the ``hip`` module and the device count,
or raises ``DriverUnavailable`` with the reason for every way of having no usable runtime or no
device (the backend then reports zero devices and keeps the reason); a runtime that is present
but fails otherwise raises ``OffloadError``. Before hip-python is imported, its version is
checked against the runtime's ``hipRuntimeGetVersion`` (``_versions``): a runtime of another HIP
release raises ``HipVersionMismatch``, so the backend is skipped with both versions named.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from offload.backend.support import DriverResults

from ._errors import hip_error_text, raise_for
from ._versions import bindings, check_match, runtime_version

__all__ = ["NO_DEVICE_STATUSES", "DriverUnavailable", "check", "find_runtime", "import_hip", "load", "ready", "runtime_path"]

#: hipErrorNoDevice, hipErrorInvalidDevice (what HIP 5.2 answers hipInit with on a machine without AMD GPU).
NO_DEVICE_STATUSES = frozenset({100, 101})


class DriverUnavailable(Exception):
    """No usable HIP runtime or no device (the reason is the message)."""


def import_hip() -> Any:
    """The hip-python ``hip`` module (10.x, 7.x and 6.4 lines all provide ``from hip import hip``)."""
    from hip import hip

    return hip


def runtime_path() -> bytes:
    """The HIP runtime library hip-python will dlopen (a path, or a bare name for the loader)."""
    try:  # hip-python's resolver, a pure-Python module (7.x and later); importing it loads no HIP
        from rocm.bindings.util.paths import get_library_path
    except ImportError:
        return b"libamdhip64.so"
    return bytes(get_library_path("amdhip64"))


def find_runtime() -> tuple[ctypes.CDLL, str]:
    """Load the HIP runtime library as hip-python will (``RTLD_NOW``) and return it with its path,
    or raise ``DriverUnavailable`` with hip-python's wording for a failed dlopen."""
    path = runtime_path()
    try:
        return ctypes.CDLL(os.fsdecode(path), mode=getattr(os, "RTLD_NOW", 0)), os.fsdecode(path)
    except OSError as exc:
        raise DriverUnavailable(f"no HIP runtime: failed to dlopen {path!r}: {exc}") from exc


def load() -> tuple[Any, int]:
    """Find the HIP runtime library, check that hip-python was generated for its HIP release,
    import hip-python and initialise HIP; return ``(hip, device_count)`` (at least 1)."""
    library, path = find_runtime()
    try:
        found = bindings()
    except ImportError as exc:
        raise DriverUnavailable(f"hip-python is not importable: {exc}") from exc
    check_match(found, runtime_version(library), path)
    try:
        hip = import_hip()
    except ImportError as exc:
        raise DriverUnavailable(f"hip-python is not importable: {exc}") from exc
    try:
        status = hip.hipInit(0)[0]
    except RuntimeError as exc:  # hip-python: "failed to dlopen 'libamdhip64.so' ..."
        raise DriverUnavailable(f"no HIP runtime: {exc}") from exc
    if status:
        if int(status) in NO_DEVICE_STATUSES:
            raise DriverUnavailable(f"hipInit: {hip_error_text(hip, status)}")
        raise_for(hip, status, "hipInit")
    status, count = hip.hipGetDeviceCount()
    if status:
        if int(status) in NO_DEVICE_STATUSES:
            raise DriverUnavailable(f"hipGetDeviceCount: {hip_error_text(hip, status)}")
        raise_for(hip, status, "hipGetDeviceCount")
    if count == 0:
        raise DriverUnavailable("hipGetDeviceCount: the HIP runtime reports 0 devices")
    return hip, int(count)


#: ``check(hip, returned, call)``: unpack a hip-python result tuple ``(hipError_t, *values)``,
#: raising on failure; ``ready(hip, returned, call)``: a query's answer (hipErrorNotReady: False).
_RESULTS = DriverResults(raise_for, not_ready=600)
check = _RESULTS.check
ready = _RESULTS.ready
