"""The simulator core's image hash (``sim_image_hash`` in core/simcore.c, FNV-1a 64): a kernel
image's host build is registered in ``GPUSIM_KERNELS`` under it (``<hash:016x>.so``, README.md).
One definition for build.py, build_listener.py and hip/hipsim.py (a test fixture; never shipped)."""

from __future__ import annotations

__all__ = ["fnv1a64"]


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64 of ``data``, as ``sim_image_hash``."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h
