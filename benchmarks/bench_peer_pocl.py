"""offload's host device against PyOpenCL on PoCL (a real OpenCL CPU device), in one process.

The same four workloads on both, timed in interleaved repeats (medians), printed as ratios
offload / PoCL (lower is better; targets from issue 8):

* roundtrip  one empty kernel (1 group of 1 item) enqueued, then a queue sync           <= 0.5x
* batch      1000 empty launches enqueued, then one sync; per launch (10 batches a sample) <= 0.7x
* saxpy      y = a*x + y over 2^24 floats in groups of 256, launch + sync               <= 1.0x
             and offload's default worker count >= 1.6x as fast as one thread on the same launch
* copy       64 MiB host -> device copy on a queue + sync                               <= 1.0x

PyOpenCL is not a dependency of offload: ``pip install "pyopencl[pocl]"`` (the test setup installs
it). Usage: ``python benchmarks/bench_peer_pocl.py [--quick] [--json] [--strict]``; without PyOpenCL
the script says how to install it and exits 0 (2 with ``--strict``).
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
from dataclasses import dataclass
from typing import Any

import offload as ol
from _measure import bench_arguments, exit_on_error, interleaved, ns_per

INSTALL_HINT = 'PyOpenCL with PoCL is not installed: pip install "pyopencl[pocl]"'


@dataclass(frozen=True)
class Config:
    repeats: int
    roundtrips: int  # round trips per sample
    batch: int  # launches per batch (then one sync)
    batches: int  # batches per sample
    saxpy_n: int
    saxpy_runs: int  # launches per saxpy sample
    copy_size: int
    copies: int  # copies per copy sample


FULL = Config(
    repeats=7, roundtrips=2000, batch=1000, batches=10, saxpy_n=1 << 24, saxpy_runs=5, copy_size=64 << 20, copies=5
)
QUICK = Config(repeats=1, roundtrips=20, batch=20, batches=1, saxpy_n=1 << 12, saxpy_runs=1, copy_size=1 << 16, copies=1)
GROUP = 256
SETTLE_S = 0.05

TARGETS = {"roundtrip": 0.5, "batch": 0.7, "saxpy": 1.0, "copy": 1.0}
TARGET_SAXPY_SCALING = 1.6

OPENCL_SOURCE = """
__kernel void noargs(void) {}
__kernel void saxpy(float a, __global const float *x, __global float *y, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


# --- offload ---------------------------------------------------------------------------------------


class OffloadSide:
    def __init__(self, cfg: Config) -> None:
        from offload_host import _native, build_test_kernel

        found: list[ol.DeviceHandle] = []

        def collect(device: ol.DeviceHandle, _: object) -> bool:
            found.append(device)
            return True

        ol.olIterateDevices(collect)
        self.device = next(
            d
            for d in found
            if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.BACKEND)
            == ol.PlatformBackend.HOST
        )
        dev = self.device
        # saxpy optimised for this CPU, as PoCL compiles its kernels (LLVM -O3 for the host CPU)
        saxpy = build_test_kernel("saxpy")  # built for this CPU (build_program's defaults), as PoCL builds its own
        self.programs = [ol.olCreateProgram(dev, image) for image in (build_test_kernel("noargs"), saxpy)]
        self.noargs = ol.olGetSymbol(self.programs[0], "noargs", ol.SymbolKind.KERNEL)
        self.saxpy = ol.olGetSymbol(self.programs[1], "saxpy", ol.SymbolKind.KERNEL)
        self.queue = ol.olCreateQueue(dev)
        self.one = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
        n = cfg.saxpy_n
        self.x = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 4 * n)
        self.y = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 4 * n)
        ol.olMemFill(None, self.x, struct.pack("f", 1.0), 4 * n)
        ol.olMemFill(None, self.y, struct.pack("f", 2.0), 4 * n)
        self.saxpy_args = struct.pack("fxxxxPPQ", 2.0, self.x, self.y, n)
        groups = (n + GROUP - 1) // GROUP
        self.saxpy_size = ol.KernelLaunchSizeArgs(1, (groups, 1, 1), (GROUP, 1, 1))
        self.src = (ctypes.c_char * cfg.copy_size)()
        ctypes.memset(self.src, 0x5A, cfg.copy_size)
        self.dst = ol.olMemAlloc(dev, ol.AllocType.DEVICE, cfg.copy_size)
        ctypes.memset(self.dst, 0, cfg.copy_size)  # first touch outside the timings, as for PoCL
        self.native, self.single = _native, _native.pool_create(0)  # one thread: the launching one

    def close(self) -> None:
        ol.olDestroyQueue(self.queue)
        for address in (self.x, self.y, self.dst):
            ol.olMemFree(address)
        for program in self.programs:
            ol.olDestroyProgram(program)
        self.native.pool_destroy(self.single)

    def roundtrip(self, count: int) -> float:
        launch, sync, q, dev, k, one = ol.olLaunchKernel, ol.olSyncQueue, self.queue, self.device, self.noargs, self.one

        def body() -> None:
            for _ in range(count):
                launch(q, dev, k, None, one)
                sync(q)

        return ns_per(body, count)

    def batch(self, count: int, batches: int = 1) -> float:
        launch, sync, q, dev, k, one = ol.olLaunchKernel, ol.olSyncQueue, self.queue, self.device, self.noargs, self.one

        def body() -> None:
            for _ in range(batches):
                for _ in range(count):
                    launch(q, dev, k, None, one)
                sync(q)

        return ns_per(body, count * batches)

    def saxpy_run(self, runs: int) -> float:
        launch, sync, q, dev, k = ol.olLaunchKernel, ol.olSyncQueue, self.queue, self.device, self.saxpy
        args, size = self.saxpy_args, self.saxpy_size

        def body() -> None:
            for _ in range(runs):
                launch(q, dev, k, args, size)
                sync(q)

        return ns_per(body, runs)

    def saxpy_one_thread(self, runs: int) -> float:
        """The same grid on a pool of no workers: only the launching thread runs groups."""
        launch, pool, k, args = self.native.launch, self.single, self.saxpy.native, self.saxpy_args
        g = self.saxpy_size.num_groups.x

        def body() -> None:
            for _ in range(runs):
                launch(pool, k, args, g, 1, 1, GROUP, 1, 1, 0)

        return ns_per(body, runs)

    def copy(self, count: int, size: int) -> float:
        memcpy, sync, q, dev = ol.olMemcpy, ol.olSyncQueue, self.queue, self.device
        dst, src = self.dst, ctypes.addressof(self.src)

        def body() -> None:
            for _ in range(count):
                memcpy(q, dst, dev, src, dev, size)
                sync(q)

        return ns_per(body, count)


# --- PyOpenCL + PoCL -------------------------------------------------------------------------------


class PoclSide:
    def __init__(self, cfg: Config, cl: Any) -> None:
        import numpy as np

        platforms = [p for p in cl.get_platforms() if "portable" in p.name.lower() or "pocl" in p.name.lower()]
        if not platforms:
            raise RuntimeError("PyOpenCL is installed but has no PoCL platform")
        self.cl = cl
        self.device = platforms[0].get_devices()[0]
        self.ctx = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.ctx)
        program = cl.Program(self.ctx, OPENCL_SOURCE).build()
        self.noargs = program.noargs
        self.saxpy = program.saxpy
        n = cfg.saxpy_n
        mf = cl.mem_flags
        self.x = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.full(n, 1.0, np.float32))
        self.y = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.full(n, 2.0, np.float32))
        self.saxpy.set_args(np.float32(2.0), self.x, self.y, np.uint64(n))
        self.global_size = ((n + GROUP - 1) // GROUP * GROUP,)
        self.src = np.full(cfg.copy_size, 0x5A, np.uint8)
        self.dst = cl.Buffer(self.ctx, mf.READ_WRITE, cfg.copy_size)
        cl.enqueue_copy(self.queue, self.dst, self.src)  # first touch outside the timings
        self.queue.finish()

    def close(self) -> None:
        self.queue.finish()

    def roundtrip(self, count: int) -> float:
        enqueue, q, k, finish = self.cl.enqueue_nd_range_kernel, self.queue, self.noargs, self.queue.finish

        def body() -> None:
            for _ in range(count):
                enqueue(q, k, (1,), (1,))
                finish()

        return ns_per(body, count)

    def batch(self, count: int, batches: int = 1) -> float:
        enqueue, q, k, finish = self.cl.enqueue_nd_range_kernel, self.queue, self.noargs, self.queue.finish

        def body() -> None:
            for _ in range(batches):
                for _ in range(count):
                    enqueue(q, k, (1,), (1,))
                finish()

        return ns_per(body, count * batches)

    def saxpy_run(self, runs: int) -> float:
        enqueue, q, k, finish, gs = self.cl.enqueue_nd_range_kernel, self.queue, self.saxpy, self.queue.finish, self.global_size

        def body() -> None:
            for _ in range(runs):
                enqueue(q, k, gs, (GROUP,))
                finish()

        return ns_per(body, runs)

    def copy(self, count: int) -> float:
        copy, q, dst, src, finish = self.cl.enqueue_copy, self.queue, self.dst, self.src, self.queue.finish

        def body() -> None:
            for _ in range(count):
                copy(q, dst, src, is_blocking=False)
                finish()

        return ns_per(body, count)


# --- the run ---------------------------------------------------------------------------------------


def measure(cfg: Config, cl: Any) -> dict[str, Any]:
    ol.olInit()
    try:
        ours = OffloadSide(cfg)
        theirs = PoclSide(cfg, cl)
        try:
            for side in (ours, theirs):  # warm up: worker threads, caches, PoCL's kernel compilation
                side.roundtrip(5)
                side.batch(5)
                side.saxpy_run(1)
            ours.copy(1, cfg.copy_size)
            theirs.copy(1)
            ours.saxpy_one_thread(1)
            m = interleaved(
                {
                    "roundtrip_offload_ns": lambda: ours.roundtrip(cfg.roundtrips),
                    "roundtrip_pocl_ns": lambda: theirs.roundtrip(cfg.roundtrips),
                    "batch_offload_ns": lambda: ours.batch(cfg.batch, cfg.batches),
                    "batch_pocl_ns": lambda: theirs.batch(cfg.batch, cfg.batches),
                    "saxpy_offload_ns": lambda: ours.saxpy_run(cfg.saxpy_runs),
                    "saxpy_pocl_ns": lambda: theirs.saxpy_run(cfg.saxpy_runs),
                    "saxpy_offload_one_thread_ns": lambda: ours.saxpy_one_thread(cfg.saxpy_runs),
                    "copy_offload_ns": lambda: ours.copy(cfg.copies, cfg.copy_size),
                    "copy_pocl_ns": lambda: theirs.copy(cfg.copies),
                },
                cfg.repeats,
                settle_s=SETTLE_S,  # let the other runtime's threads go idle (PoCL's poll a while)
            )
        finally:
            theirs.close()
            ours.close()
    finally:
        ol.olShutDown()
    ratios = {name: m[f"{name}_offload_ns"] / m[f"{name}_pocl_ns"] for name in TARGETS}
    scaling = m["saxpy_offload_one_thread_ns"] / m["saxpy_offload_ns"]
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "pocl_device": theirs.device.name.strip(),
        "times_ns": m,
        "ratios": ratios,
        "saxpy_scaling": scaling,
        "checks": {
            **{name: ratios[name] <= target for name, target in TARGETS.items()},
            "saxpy_scaling": scaling >= TARGET_SAXPY_SCALING,
        },
    }


def report(results: dict[str, Any], cfg: Config) -> str:
    m, r = results["times_ns"], results["ratios"]
    rows = [
        ("roundtrip", "empty kernel enqueue + sync", m["roundtrip_offload_ns"], m["roundtrip_pocl_ns"], "ns"),
        ("batch", f"{cfg.batch} enqueued empty launches + sync, per launch", m["batch_offload_ns"], m["batch_pocl_ns"], "ns"),
        ("saxpy", f"saxpy 2^{cfg.saxpy_n.bit_length() - 1} floats (groups of {GROUP}) launch + sync", m["saxpy_offload_ns"], m["saxpy_pocl_ns"], "ns"),
        ("copy", f"{cfg.copy_size >> 20 or cfg.copy_size} {'MiB' if cfg.copy_size >> 20 else 'B'} host->device copy on a queue + sync", m["copy_offload_ns"], m["copy_pocl_ns"], "ns"),
    ]
    lines = [
        f"offload host device vs PyOpenCL on PoCL ({results['pocl_device']}; {results['cpus']} CPUs; medians;"
        f" offload's saxpy built with {' '.join(_saxpy_flags())})",
        "",
        f"  {'workload':<62} {'offload':>12} {'PoCL':>12} {'ratio':>7}  target",
    ]
    for key, text, ours, theirs, unit in rows:
        verdict = "PASS" if results["checks"][key] else "FAIL"
        lines.append(
            f"  {text:<62} {ours / 1e3:10.2f}us {theirs / 1e3:10.2f}us {r[key]:6.2f}x  <= {TARGETS[key]:g}x {verdict}"
        )
    scaling = results["saxpy_scaling"]
    lines.append(
        f"  {'saxpy default workers vs one thread (speed-up)':<62} {m['saxpy_offload_ns'] / 1e3:10.2f}us "
        f"{m['saxpy_offload_one_thread_ns'] / 1e3:10.2f}us {scaling:6.2f}x  >= {TARGET_SAXPY_SCALING:g}x "
        f"{'PASS' if results['checks']['saxpy_scaling'] else 'FAIL'}"
    )
    return "\n".join(lines)


def _saxpy_flags() -> tuple[str, ...]:
    """The flags offload's saxpy is built with (offload_host.build_program's defaults)."""
    from offload_host import machine_flags

    return machine_flags()


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, "tiny sizes (a smoke run)", strict="exit 1 when a target is missed, 2 without PyOpenCL")
    args = parser.parse_args(argv)
    try:
        import pyopencl as cl
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2 if args.strict else 0
    cfg = QUICK if args.quick else FULL
    results = measure(cfg, cl)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report(results, cfg))
    return 1 if args.strict and not all(results["checks"].values()) else 0


if __name__ == "__main__":
    exit_on_error(main, "bench_peer_pocl")
