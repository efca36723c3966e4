"""offload-opencl against raw PyOpenCL on the same OpenCL device (PoCL's CPU device), in one
process: the per-call overhead of offload's layers (the flat API's checks and handles, the core,
the backend's argument unpacking and SVM wrapping) over the driver calls they end in.

Both sides use the same context's device, kernels built from the same OpenCL C source, SVM
memory and in-order queues; timed in interleaved repeats (medians, microseconds per call):

* launch     one launch of ``k(global uint *out, uint n)`` (1 group of 1 item) enqueued, per call
             (1000 a sample, then one sync outside the timing), against the bare
             ``clEnqueueNDRangeKernel`` (arguments set once); offload-opencl sets a kernel's
             arguments only when they differ from its last launch's
* launch_set the same against PyOpenCL's usual ``kernel(queue, grid, block, *args)``, which sets
             every argument on every call
* roundtrip  one empty-kernel launch then a queue sync
* copy       a 4 KiB host -> SVM copy on a queue then a sync
* event      a marker event recorded and waited for

Printed as offload / PyOpenCL ratios (no targets: one run's figures, for the record).
Usage: ``python benchmarks/bench_opencl.py [--quick] [--json]``; without offload-opencl or an
OpenCL device it says why and exits 0.
"""

from __future__ import annotations

import ctypes
import json
import struct
import sys
from typing import Any

import numpy as np

import offload as ol
from _measure import bench_arguments, exit_on_error, interleaved, ns_per

SOURCE = b"""
kernel void noargs(void) {}
kernel void k(global uint *out, uint n) { if (get_global_id(0) < n) out[get_global_id(0)] = n; }
"""
COPY = 4096


def _device_of(platform: str) -> ol.DeviceHandle | None:
    """The first device of ``platform``."""
    found: list[ol.DeviceHandle] = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    named = (d for d in found if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME) == platform)
    return next(named, None)


def measure(quick: bool, cl: Any) -> dict[str, Any]:
    calls, repeats = (20, 1) if quick else (1000, 7)
    ol.olInit()
    try:
        device, host = _device_of("opencl"), _device_of("host")
        if device is None or host is None:
            raise RuntimeError("no OpenCL device (or no host device): offload-opencl finds no PyOpenCL device with SVM")
        native = device.native.device  # the backend's OpenCLDevice: the same cl context and device
        ctx, cl_device = native.context, native.device
        program = ol.olCreateProgram(device, SOURCE)
        k, noargs = (ol.olGetSymbol(program, n, ol.SymbolKind.KERNEL) for n in ("k", "noargs"))
        out = ol.olMemAlloc(device, ol.AllocType.DEVICE, COPY)
        queue = ol.olCreateQueue(device)
        args = struct.pack("PI4x", out, 7)
        one = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
        src = (ctypes.c_char * COPY)()

        raw_q = cl.CommandQueue(ctx, cl_device)
        raw_prg = cl.Program(ctx, SOURCE.decode()).build()
        raw_k, raw_noargs = cl.Kernel(raw_prg, "k"), cl.Kernel(raw_prg, "noargs")
        raw_out = cl.SVMAllocation(ctx, COPY, 0, cl.svm_mem_flags.READ_WRITE)
        n = np.uint32(7)

        def off_launch() -> float:
            def body() -> None:
                for _ in range(calls):
                    ol.olLaunchKernel(queue, device, k, args, one)
            t = ns_per(body, calls)
            ol.olSyncQueue(queue)
            return t

        def raw_launch() -> float:  # the arguments set once: the bare driver call per launch
            raw_k.set_arg(0, raw_out)
            raw_k.set_arg(1, n)

            def body() -> None:
                for _ in range(calls):
                    cl.enqueue_nd_range_kernel(raw_q, raw_k, (1,), (1,))
            t = ns_per(body, calls)
            raw_q.finish()
            return t

        def raw_launch_set() -> float:  # PyOpenCL's usual call: the arguments set every launch
            def body() -> None:
                for _ in range(calls):
                    raw_k(raw_q, (1,), (1,), raw_out, n)
            t = ns_per(body, calls)
            raw_q.finish()
            return t

        def off_roundtrip() -> float:
            def body() -> None:
                for _ in range(calls):
                    ol.olLaunchKernel(queue, device, noargs, None, one)
                    ol.olSyncQueue(queue)
            return ns_per(body, calls)

        def raw_roundtrip() -> float:
            def body() -> None:
                for _ in range(calls):
                    cl.enqueue_nd_range_kernel(raw_q, raw_noargs, (1,), (1,))
                    raw_q.finish()
            return ns_per(body, calls)

        def off_copy() -> float:
            def body() -> None:
                for _ in range(calls):
                    ol.olMemcpy(queue, out, device, ctypes.addressof(src), host, COPY)
                    ol.olSyncQueue(queue)
            return ns_per(body, calls)

        def raw_copy() -> float:
            def body() -> None:
                for _ in range(calls):
                    cl.enqueue_copy(raw_q, raw_out, src, is_blocking=False)
                    raw_q.finish()
            return ns_per(body, calls)

        def off_event() -> float:
            def body() -> None:
                for _ in range(calls):
                    event = ol.olCreateEvent(queue)
                    ol.olSyncEvent(event)
                    ol.olDestroyEvent(event)
            return ns_per(body, calls)

        def raw_event() -> float:
            def body() -> None:
                for _ in range(calls):
                    cl.enqueue_marker(raw_q).wait()
            return ns_per(body, calls)

        pairs = {"launch": (off_launch, raw_launch), "launch_set": (off_launch, raw_launch_set),
                 "roundtrip": (off_roundtrip, raw_roundtrip),
                 "copy": (off_copy, raw_copy), "event": (off_event, raw_event)}  # fmt: skip
        for off, raw in pairs.values():  # warm up: kernels compiled, pools filled
            off(), raw()
        results: dict[str, Any] = {"device": ol.olGetDeviceInfo(device, ol.DeviceInfo.NAME), "calls": calls, "repeats": repeats}
        for name, (off, raw) in pairs.items():
            got = interleaved({"offload": off, "pyopencl": raw}, repeats, gc_off=True)
            results[name] = {"offload_us": got["offload"] / 1e3, "pyopencl_us": got["pyopencl"] / 1e3,
                             "ratio": got["offload"] / got["pyopencl"]}  # fmt: skip
        ol.olDestroyQueue(queue)
        ol.olMemFree(out)
        ol.olDestroyProgram(program)
        raw_out.release()
        return results
    finally:
        ol.olShutDown()


def report(results: dict[str, Any]) -> str:
    lines = [f"offload-opencl vs PyOpenCL on {results['device']} ({results['calls']} calls a sample, median of {results['repeats']})"]
    lines.append(f"  {'case':<10} {'offload us':>11} {'pyopencl us':>12} {'ratio':>7}")
    for name in ("launch", "launch_set", "roundtrip", "copy", "event"):
        r = results[name]
        lines.append(f"  {name:<10} {r['offload_us']:>11.2f} {r['pyopencl_us']:>12.2f} {r['ratio']:>6.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, "few calls, one repeat (a smoke run)", strict=None)
    args = parser.parse_args(argv)
    try:
        import pyopencl as cl
        import offload_opencl  # noqa: F401
    except ImportError as exc:
        print(f"offload-opencl and PyOpenCL are needed ({exc}): pip install ./backends/opencl \"pyopencl[pocl]\"", file=sys.stderr)
        return 0
    results = measure(args.quick, cl)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    exit_on_error(main, "bench_opencl")
