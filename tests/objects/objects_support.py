"""Helpers of the object layer's tests (a module of its own: test files import it by name)."""

from __future__ import annotations

import struct

import offload
from offload._core.session import STATE
from offload.objects import Kernel, Queue, _records, _session

SAXPY_SIGNATURE = "float a, const float *x, float *y, uint64_t n"
# a host kernel writing its float and int64 arguments' bytes to out[0:4] and out[8:16] (the
# ``echo`` fixture: what a launch packed, remembered or not)
ECHO = (
    "#include <offload_host.h>\n#include <string.h>\n"
    "struct a { float f; int64_t n; unsigned char *out; };\n"
    "OFFLOAD_KERNEL(echo) { const struct a *q = OFFLOAD_ARGS(struct a);\n"
    "  memcpy(q->out, &q->f, 4); memcpy(q->out + 8, &q->n, 8); }\n"
)
ECHO_SIGNATURE = "float f, int64_t n, unsigned char *out"


def echoed(out: offload.Buffer) -> tuple[bytes, int]:
    """What the echo kernel wrote to ``out``: its float argument's bytes, its int argument."""
    data = out.to_bytes()
    return data[:4], struct.unpack("=q", data[8:16])[0]


def relaunched() -> int:
    """Launches replayed in C so far (``_records``: the kernels' launch verdicts; 0 where it is off)."""
    if not _records.ACTIVE:
        return 0
    return sum(method.counts["fast"] for method in (Queue.launch, Kernel.launch))  # type: ignore[attr-defined]


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
