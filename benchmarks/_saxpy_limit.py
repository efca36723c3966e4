"""bench_host's saxpy section: offload's host saxpy against the bandwidth limit, a bare C OpenMP
loop over the same buffers.

The limit is ``y[i] = a * x[i] + y[i]`` in one ``#pragma omp parallel for`` compiled with
``$CC -O3 -march=native -fopenmp`` and called through ctypes (the GIL released); offload's side is
the shipped ``saxpy`` kernel (built by ``offload_host.build_test_kernel``, the defaults of
``build_program``) launched in groups of 256 on a queue, then ``olSyncQueue``. Both run on the
same two ``olMemAlloc`` buffers, in interleaved samples; the figure is the median of per-round
ratios offload / C. ``OMP_WAIT_POLICY=passive`` (set before libgomp loads, unless already set) so
that OpenMP's idle threads do not spin on the CPUs offload's pool needs. Target: <= 1.15x.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import offload as ol
from offload_host import build_test_kernel
from _measure import interleaved_samples, medians, ns_per, paired_ratio

__all__ = ["TARGET_SAXPY_RATIO", "bench_saxpy"]

TARGET_SAXPY_RATIO = 1.15
GROUP = 256

OPENMP_SAXPY = r"""
#include <stdint.h>
void saxpy_omp(float a, const float *restrict x, float *restrict y, uint64_t n) {
#pragma omp parallel for schedule(static)
  for (uint64_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
"""
OPENMP_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")


def _build_openmp(workdir: Path) -> ctypes.CDLL | str:
    """The OpenMP saxpy library, or why it cannot be built."""
    argv = shlex.split(os.environ.get("CC") or "cc")
    if not argv or shutil.which(argv[0]) is None:
        return "no C compiler ($CC or cc)"
    source, library = workdir / "saxpy_omp.c", workdir / "libsaxpy_omp.so"
    source.write_text(OPENMP_SAXPY)
    proc = subprocess.run([*argv, *OPENMP_FLAGS, "-o", str(library), str(source)], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"the OpenMP saxpy does not build: {proc.stderr.strip()[-300:]}"
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read by libgomp when it loads
    lib = ctypes.CDLL(str(library))
    lib.saxpy_omp.argtypes = (ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64)
    lib.saxpy_omp.restype = None
    return lib


def bench_saxpy(device: ol.DeviceHandle, n: int, runs: int, repeats: int) -> dict[str, Any]:
    """ns per saxpy over ``n`` floats (``runs`` a sample) for offload and the C loop, and the ratio."""
    with tempfile.TemporaryDirectory(prefix="bench-saxpy-") as tmp:
        lib = _build_openmp(Path(tmp))
        if isinstance(lib, str):
            return {"skipped": lib}
        program = ol.olCreateProgram(device, build_test_kernel("saxpy"))
        queue = ol.olCreateQueue(device)
        x = ol.olMemAlloc(device, ol.AllocType.DEVICE, 4 * n)
        y = ol.olMemAlloc(device, ol.AllocType.DEVICE, 4 * n)
        try:
            ctypes.memset(x, 0, 4 * n)
            ctypes.memset(y, 0, 4 * n)
            kernel = ol.olGetSymbol(program, "saxpy", ol.SymbolKind.KERNEL)
            args = struct.pack("fxxxxPPQ", 2.0, x, y, n)
            size = ol.KernelLaunchSizeArgs(1, ((n + GROUP - 1) // GROUP, 1, 1), (GROUP, 1, 1))
            launch, sync, omp = ol.olLaunchKernel, ol.olSyncQueue, lib.saxpy_omp

            def offload_runs() -> None:
                for _ in range(runs):
                    launch(queue, device, kernel, args, size)
                    sync(queue)

            def openmp_runs() -> None:
                for _ in range(runs):
                    omp(2.0, x, y, n)

            offload_runs()  # first touch, thread start, page faults: outside the timings
            openmp_runs()
            samples = interleaved_samples(
                {"offload_ns": lambda: ns_per(offload_runs, runs), "openmp_ns": lambda: ns_per(openmp_runs, runs)},
                repeats,
            )
        finally:
            ol.olMemFree(x)
            ol.olMemFree(y)
            ol.olDestroyQueue(queue)
            ol.olDestroyProgram(program)
    figures = medians(samples)
    gbps = 12 * n  # bytes moved per saxpy: read x and y, write y
    return {
        **figures,
        "n": n,
        "offload_gbps": gbps / figures["offload_ns"],
        "openmp_gbps": gbps / figures["openmp_ns"],
        "ratio": paired_ratio(samples["offload_ns"], samples["openmp_ns"]),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
    }
