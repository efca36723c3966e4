"""Micro-benchmarks of offload's AMDGPU backend against the simulated HIP runtime, in one run.

The peer of each ``ol*`` call is the same HIP call made directly through hip-python, on the same
simulated runtime, in the same process, measured in interleaved rounds (a ratio is the median of
the per-round ratios):

* launch  ``olLaunchKernel`` enqueued on a queue (N launches of ``noargs``, 1 group of 1 item)
          against raw ``hipModuleLaunchKernel`` on a stream (N launches); also with an 8-byte
          argument (``foo``): the packed bytes against a prebuilt ``extra`` array.
          Target: enqueued <= 1.3x raw.
* memcpy  8-byte host-to-device ``olMemcpy`` on a queue against raw ``hipMemcpyHtoDAsync``.
          Target: <= 1.5x raw.

What is measured is the cost of an enqueue on the calling thread: the stream is held by a
blocking host function while the calls are made (so the simulator's worker, which runs every
operation as a GPU would, is not woken per call), then released and drained off the clock. A
stream takes about a thousand pending operations before the enqueuing call blocks (the push
buffer: GPUSIM_PUSH_BUFFER, 1024 by default, and about the same on real hardware), so the calls
are made in batches of at most BATCH (1000, or less under a smaller GPUSIM_PUSH_BUFFER) behind
one gate each; a batch larger than that would block
behind its own gate forever. A HIP error in a raw call ends the run with exit status 2 (the ol
calls raise OffloadError), instead of measuring calls that fail or waiting for a dead stream.
No AMD hardware is involved. Needs gcc (the simulator) and clang-19 (the kernels; installed with
apt where possible, see tests/simulators/hip/hipsim.py).

Usage: ``python benchmarks/bench_amdgpu.py [--quick] [--json] [--strict]``.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import bench_arguments, flat_devices, interleaved_samples, log, medians, paired_ratio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "simulators" / "hip"))

TARGET_LAUNCH_RATIO = 1.3
# Calls behind one gate: with the gate itself, under the push buffer (the simulator's
# GPUSIM_PUSH_BUFFER when set, else ~1024 entries, as on real hardware).
BATCH = max(1, min(1000, int(os.environ.get("GPUSIM_PUSH_BUFFER") or 1024) - 24))
TARGET_MEMCPY_RATIO = 1.5
_CHILD_MARK = "OFFLOAD_BENCH_AMDGPU_DIR"


def prepare() -> Path:
    """Build the simulator and the two kernels; return the build folder."""
    import hipsim

    out = Path(tempfile.mkdtemp(prefix="bench-amdgpu-"))
    hipsim.build_runtime(out)
    hipsim.clang_toolchain()
    for name in ("noargs", "foo"):
        source = hipsim.KERNELS / f"{name}.cu"
        code = hipsim.build_code_object(source, hipsim.SIM_TARGET, out / f"{name}.hsaco")
        hipsim.build_host(source, code.read_bytes(), out / "registry", out / "host")
    return out


def reexec_with_simulator(argv: list[str]) -> None:
    """The dynamic loader reads LD_LIBRARY_PATH at start: run this script again with it set."""
    folder = prepare()
    # (OFFLOAD_COMPILED passes: OFFLOAD_COMPILED=0 measures the pure-Python path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_") or k == "OFFLOAD_COMPILED"}
    env.update(
        {
            _CHILD_MARK: str(folder),
            "LD_LIBRARY_PATH": str(folder),
            "GPUSIM_KERNELS": str(folder / "registry"),
            "ROCM_PATH": str(folder / "no-rocm"),
        }
    )
    os.execve(sys.executable, [sys.executable, *argv], env)


class DriverError(RuntimeError):
    """A raw HIP call failed: the run stops (exit status 2)."""


def check(call: str, status: Any) -> None:
    if status:
        raise DriverError(f"{call} failed: hipError_t {int(status)}")


def timed(gate: Callable[[], Callable[[], None]], body: Callable[[int], None], calls: int) -> float:
    """ns per call of ``body`` over ``calls`` calls, in batches of at most BATCH, each on a
    freshly gated stream; the gate opens and the stream drains after each batch, off the clock."""
    total = 0
    done = 0
    while done < calls:
        batch = min(BATCH, calls - done)
        drain = gate()
        enabled = gc.isenabled()
        gc.disable()
        try:
            start = time.perf_counter_ns()
            body(batch)
            total += time.perf_counter_ns() - start
        finally:
            if enabled:
                gc.enable()
            drain()
        done += batch
    return total / calls


def interleaved(variants: dict[str, Callable[[], float]], repeats: int) -> tuple[dict[str, float], float]:
    """Medians of each variant's interleaved samples, and the paired ratio first / second."""
    samples = interleaved_samples(variants, repeats)
    return medians(samples), paired_ratio(*samples.values())


def run(quick: bool) -> dict[str, Any]:
    import offload as ol
    from hip import hip

    folder = Path(os.environ[_CHILD_MARK])
    repeats, calls = (3, 500) if quick else (31, 5_000)
    ol.olInit()
    devices = flat_devices()
    device = next(d for d in devices if d.platform.kind is ol.PlatformBackend.AMDGPU)
    host = next(d for d in devices if d.platform.kind is ol.PlatformBackend.HOST)
    one = ol.KernelLaunchSizeArgs(
        dimensions=1, num_groups=ol.Dimensions(1, 1, 1), group_size=ol.Dimensions(1, 1, 1), dyn_shared_memory=0
    )
    noargs_prog = ol.olCreateProgram(device, (folder / "noargs.hsaco").read_bytes())
    foo_prog = ol.olCreateProgram(device, (folder / "foo.hsaco").read_bytes())
    noargs = ol.olGetSymbol(noargs_prog, "noargs", ol.SymbolKind.KERNEL)
    foo = ol.olGetSymbol(foo_prog, "foo", ol.SymbolKind.KERNEL)
    queue = ol.olCreateQueue(device)
    dev_mem = ol.olMemAlloc(device, ol.AllocType.DEVICE, 4096)
    host_buf = ctypes.create_string_buffer(8)
    host_addr = ctypes.addressof(host_buf)
    foo_args = bytes(ctypes.c_void_p(dev_mem))

    # the raw HIP peers: their own module, functions and stream
    module = hip.hipModuleLoadData((folder / "noargs.hsaco").read_bytes())[1]
    raw_noargs = hip.hipModuleGetFunction(module, b"noargs")[1]
    foo_module = hip.hipModuleLoadData((folder / "foo.hsaco").read_bytes())[1]
    raw_foo = hip.hipModuleGetFunction(foo_module, b"foo")[1]
    stream = hip.hipStreamCreateWithFlags(1)[1]
    arg = ctypes.c_void_p(dev_mem)
    size = ctypes.c_size_t(8)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(arg), 2, ctypes.addressof(size), 3)
    extra_addr = ctypes.addressof(extra)
    launch_kernel, mod_launch, sync_queue, memcpy = (
        ol.olLaunchKernel,
        hip.hipModuleLaunchKernel,
        ol.olSyncQueue,
        ol.olMemcpy,
    )
    htod, stream_sync = hip.hipMemcpyHtoDAsync, hip.hipStreamSynchronize

    # Each variant only enqueues; the stream is gated by a blocking host function first, so the
    # simulator's worker sleeps in it and no enqueue pays for waking it (a GPU driver rings a
    # doorbell instead). The gate opens and the stream drains after the clock stops.
    raw_gate: list[threading.Event] = []
    raw_gate_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: raw_gate[-1].wait(60) and None)

    def ol_gate() -> Callable[[], None]:
        release = threading.Event()
        ol.olLaunchHostFunction(queue, lambda _: release.wait(60) and None)

        def drain() -> None:
            release.set()
            sync_queue(queue)

        return drain

    def raw_gate_open() -> Callable[[], None]:
        raw_gate.append(threading.Event())
        check("hipLaunchHostFunc", hip.hipLaunchHostFunc(stream, ctypes.cast(raw_gate_fn, ctypes.c_void_p).value, 0)[0])

        def drain() -> None:
            raw_gate[-1].set()
            while int(hip.hipStreamQuery(stream)[0]) == 600:  # hipErrorNotReady: let the gate return first
                time.sleep(1e-5)  # (hip-python 6.4 / 7.x hold the GIL in hipStreamSynchronize)
            check("hipStreamSynchronize", stream_sync(stream)[0])

        return drain

    Loop = Callable[[int], None]

    def ol_launches(kernel: Any, args: bytes | None) -> Loop:
        def body(n: int) -> None:
            for _ in range(n):
                launch_kernel(queue, device, kernel, args, one)

        return body

    def raw_launches(function: Any, extra: int | None) -> Loop:
        def body(n: int) -> None:
            for _ in range(n):
                status = mod_launch(function, 1, 1, 1, 1, 1, 1, 0, stream, None, extra)[0]
                if status:
                    check("hipModuleLaunchKernel", status)

        return body

    ol_launch, raw_launch = ol_launches(noargs, None), raw_launches(raw_noargs, None)
    ol_launch_args, raw_launch_args = ol_launches(foo, foo_args), raw_launches(raw_foo, extra_addr)

    def ol_copy(n: int) -> None:
        for _ in range(n):
            memcpy(queue, dev_mem, device, host_addr, host, 8)

    def raw_copy(n: int) -> None:
        for _ in range(n):
            status = htod(dev_mem, host_addr, 8, stream)[0]
            if status:
                check("hipMemcpyHtoDAsync", status)

    for body, gate in ((ol_launch, ol_gate), (raw_launch, raw_gate_open), (ol_launch_args, ol_gate),
                       (raw_launch_args, raw_gate_open), (ol_copy, ol_gate), (raw_copy, raw_gate_open)):  # fmt: skip
        timed(gate, body, min(calls, 200))  # warm-up: first calls resolve symbols, start workers

    def against_raw(offload: tuple[str, Loop], raw: tuple[str, Loop]) -> tuple[dict[str, float], float]:
        """The offload side's and the raw side's ns per call (each behind its gate), interleaved,
        and the paired ratio offload / raw."""
        (ol_name, ol_body), (raw_name, raw_body) = offload, raw
        return interleaved(
            {ol_name: lambda: timed(ol_gate, ol_body, calls), raw_name: lambda: timed(raw_gate_open, raw_body, calls)}, repeats
        )

    log(f"bench_amdgpu: {repeats} interleaved rounds of {calls} calls (simulated HIP runtime)")
    launch, launch_ratio = against_raw(("olLaunchKernel enqueued", ol_launch), ("hipModuleLaunchKernel raw", raw_launch))
    launch_args, launch_args_ratio = against_raw(
        ("olLaunchKernel enqueued, 8 B args", ol_launch_args), ("hipModuleLaunchKernel raw, 8 B extra", raw_launch_args)
    )
    copy, copy_ratio = against_raw(("olMemcpy 8 B enqueued", ol_copy), ("hipMemcpyHtoDAsync 8 B raw", raw_copy))
    # Where the overhead lies: the backend's hooks called directly (as the core calls them).
    backend, native_device, native_queue = device.backend, device.native, queue.native
    hook_launch, hook_submit, native_kernel = backend.launch_kernel, backend.data_submit, noargs.native

    def hook_launch_only(n: int) -> None:
        for _ in range(n):
            hook_launch(native_device, native_queue, native_kernel, None, one)

    def hook_copy_only(n: int) -> None:
        for _ in range(n):
            hook_submit(native_device, dev_mem, host_addr, 8, native_queue)

    _, hook_launch_ratio = against_raw(("hook", hook_launch_only), ("raw", raw_launch))
    _, hook_copy_ratio = against_raw(("hook", hook_copy_only), ("raw", raw_copy))
    breakdown = {
        "launch_kernel hook alone / hipModuleLaunchKernel": hook_launch_ratio,
        "data_submit hook alone / hipMemcpyHtoDAsync": hook_copy_ratio,
    }
    hip.hipStreamDestroy(stream)
    hip.hipModuleUnload(module)
    hip.hipModuleUnload(foo_module)
    ol.olMemFree(dev_mem)
    ol.olDestroyQueue(queue)
    ol.olDestroyProgram(noargs_prog)
    ol.olDestroyProgram(foo_prog)
    ol.olShutDown()
    timings = {**launch, **launch_args, **copy}
    ratios = {
        "olLaunchKernel / hipModuleLaunchKernel": launch_ratio,
        "olLaunchKernel / hipModuleLaunchKernel (8 B args)": launch_args_ratio,
        "olMemcpy 8 B / hipMemcpyHtoDAsync": copy_ratio,
    }
    targets = {
        "olLaunchKernel / hipModuleLaunchKernel": TARGET_LAUNCH_RATIO,
        "olLaunchKernel / hipModuleLaunchKernel (8 B args)": TARGET_LAUNCH_RATIO,
        "olMemcpy 8 B / hipMemcpyHtoDAsync": TARGET_MEMCPY_RATIO,
    }
    return {
        "calls": calls,
        "repeats": repeats,
        "ns_per_call": timings,
        "ratios": ratios,
        "targets": targets,
        "breakdown": breakdown,
    }


def report(results: dict[str, Any]) -> list[str]:
    lines = ["timings (ns per call, medians of interleaved rounds):"]
    lines += [f"  {name:<40} {value:>10.0f}" for name, value in results["ns_per_call"].items()]
    lines.append("summary (median of paired per-round ratios vs raw hip-python on the same simulated runtime; target):")
    for name, ratio in results["ratios"].items():
        target = results["targets"][name]
        lines.append(f"  {name:<50} {ratio:5.2f}x  (<= {target}x: {'met' if ratio <= target else 'MISSED'})")
    lines.append("breakdown (the backend's hook called directly, without the core's entry point):")
    lines += [f"  {name:<50} {ratio:5.2f}x" for name, ratio in results["breakdown"].items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, "few calls (a smoke run)")
    args = parser.parse_args(argv)
    if _CHILD_MARK not in os.environ:
        reexec_with_simulator([str(Path(__file__).resolve()), *(argv if argv is not None else sys.argv[1:])])
    try:
        results = run(args.quick)
    except DriverError as exc:
        log(f"bench_amdgpu: stopped: {exc}")
        return 2
    finally:  # the build folder made by reexec_with_simulator
        shutil.rmtree(os.environ[_CHILD_MARK], ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print("\n".join(report(results)))
    missed = [name for name, ratio in results["ratios"].items() if ratio > results["targets"][name]]
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
