"""Reaching the HIP runtime through hip-python: import, ``hipInit``, device count.

hip-python imports without a runtime and dlopens ``libamdhip64.so`` at its first call; a
missing library is a plain ``RuntimeError``. ``open_runtime`` turns every way of having no
usable runtime or no device into ``(hip or None, device count 0, reason)``; a runtime that is
present but fails otherwise raises.
"""

from __future__ import annotations

from typing import Any

from ._errors import hip_error_text, raise_hip_error

__all__ = ["NO_DEVICE_STATUSES", "import_hip", "open_runtime"]

#: hipErrorNoDevice, hipErrorInvalidDevice (what HIP 5.2 answers hipInit with on a machine without AMD GPU).
NO_DEVICE_STATUSES = frozenset({100, 101})


def import_hip() -> Any:
    """The hip-python ``hip`` module (10.x, 7.x and 6.4 lines all provide ``from hip import hip``)."""
    from hip import hip

    return hip


def open_runtime() -> tuple[Any, int, str | None]:
    """``(hip, device count, reason)``; reason says why there are no devices (None when some)."""
    try:
        hip = import_hip()
    except ImportError as exc:
        return None, 0, f"hip-python is not importable: {exc}"
    try:
        status = hip.hipInit(0)[0]
    except RuntimeError as exc:  # hip-python: "failed to dlopen 'libamdhip64.so' ..."
        return None, 0, f"no HIP runtime: {exc}"
    if status:
        if int(status) in NO_DEVICE_STATUSES:
            return hip, 0, f"hipInit: {hip_error_text(hip, status)}"
        raise_hip_error(hip, "hipInit", status)
    status, count = hip.hipGetDeviceCount()
    if status:
        if int(status) in NO_DEVICE_STATUSES:
            return hip, 0, f"hipGetDeviceCount: {hip_error_text(hip, status)}"
        raise_hip_error(hip, "hipGetDeviceCount", status)
    if count == 0:
        return hip, 0, "hipGetDeviceCount: the HIP runtime reports 0 devices"
    return hip, int(count), None
