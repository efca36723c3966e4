"""Helpers of the object layer's tests (a module of its own: test files import it by name)."""

from __future__ import annotations

import offload
from offload._runtime import STATE
from offload.objects import _session

SAXPY_SIGNATURE = "float a, const float *x, float *y, uint64_t n"


def release_library() -> None:
    """Drop the layer's reference and any flat one left: the library is idle afterwards."""
    _session.release()
    while STATE.ctx is not None:
        offload.olShutDown()


def platform_ids() -> list[str]:
    """``platform:index`` of every device present (asked with the flat API, then released)."""
    offload.olInit()
    try:
        found: list[str] = []
        offload.olIterateDevices(lambda d, _: found.append(f"{d.platform.name}:{d.index}") is None)
        return found
    finally:
        offload.olShutDown()
