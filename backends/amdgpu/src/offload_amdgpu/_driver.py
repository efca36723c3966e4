"""Loading the HIP runtime through hip-python (imported here only, on first use), and the one
result check of every HIP call.

hip-python imports without a runtime and dlopens ``libamdhip64.so`` at its first call; a missing
library is a plain ``RuntimeError``. ``load()`` returns the ``hip`` module and the device count,
or raises ``DriverUnavailable`` with the reason for every way of having no usable runtime or no
device (the backend then reports zero devices and keeps the reason); a runtime that is present
but fails otherwise raises ``OffloadError``.
"""

from __future__ import annotations

from typing import Any

from ._errors import hip_error_text, raise_for

__all__ = ["NO_DEVICE_STATUSES", "DriverUnavailable", "check", "import_hip", "load"]

#: hipErrorNoDevice, hipErrorInvalidDevice (what HIP 5.2 answers hipInit with on a machine without AMD GPU).
NO_DEVICE_STATUSES = frozenset({100, 101})


class DriverUnavailable(Exception):
    """No usable HIP runtime or no device (the reason is the message)."""


def import_hip() -> Any:
    """The hip-python ``hip`` module (10.x, 7.x and 6.4 lines all provide ``from hip import hip``)."""
    from hip import hip

    return hip


def load() -> tuple[Any, int]:
    """Import hip-python and initialise HIP; return ``(hip, device_count)`` (at least 1)."""
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


def check(hip: Any, returned: Any, call: str) -> Any:
    """Unpack a hip-python result tuple ``(hipError_t, *values)``: raise on failure, else the
    value (None for none, a tuple for several)."""
    status = returned[0]
    if status:
        raise_for(hip, status, call)
    if len(returned) == 1:
        return None
    return returned[1] if len(returned) == 2 else returned[1:]
