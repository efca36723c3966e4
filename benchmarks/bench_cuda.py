"""Micro-benchmarks of offload's CUDA backend against raw cuda.bindings calls, in one run.

Both sides of every ratio call the same driver through the same bindings, so the ratio is the
cost of offload's layers (core + backend). By default the driver is the project's simulated
one (tests/simulators; the script re-executes itself with it on LD_LIBRARY_PATH); with
``OFFLOAD_CUDA_REAL=1`` it is the machine's real driver.

Sections (variants timed in interleaved repeats, GC off while timing, medians reported):

Ratios are the median of per-round ratios (each round times both sides back to back).

* launch   ``olLaunchKernel`` of ``foo`` (1 block of 1 thread) enqueued on a queue, N launches
           behind a host function holding the stream (the enqueue loop timed; release and sync
           after it, untimed), against raw ``cuLaunchKernel`` with the same packed-argument
           ``extra`` array on a stream held the same way. Target: <= 1.3x
           (<= 1.2x on a real GPU).
* memcpy   an 8-byte ``olMemcpy`` host-to-device on a queue against raw ``cuMemcpyHtoDAsync``,
           from pinned host memory, both enqueued behind a held stream like the launches.
           Target: <= 1.5x. The peers (cuda.core, offload's objects) enqueue the same launch
           and copy; the objects launch ``foo`` with its signature declared and without one
           (packed by the sizes the driver reports and the arguments' classes). Target: each
           <= 1.3x the flat launch. Also 64 MiB from pinned host memory (``olMemAlloc(HOST)``): the
           bandwidth ratio (target >= 0.97x on a real GPU; reported only on the simulator).
* pooled   an allocate-use-free loop on a held stream per side (``_cuda_pool``): raw
           ``cuMemAllocAsync``, cuda.core's pooled ``Device.allocate(stream=)``, ``olMemAllocAsync``
           and the object layer's ``device.alloc(queue=)``. Target: objects <= 1.5x cuda.core.
* churn    ``olCreateQueue`` + ``olDestroyQueue`` N times (pooled streams) against raw
           ``cuStreamCreate`` + ``cuStreamDestroy``: queues/s.

Every held batch stays under the driver's push buffer (about 1024 pending operations per
stream on NVIDIA drivers, ``GPUSIM_PUSH_BUFFER`` on the simulator): past it the enqueuing call
blocks until the device drains work, which a held stream never does (``_cuda_held.py``). A driver
error (or offload error) ends the run with a one-line message on stderr and exit status 2,
after releasing any held stream, instead of hanging behind it.

Usage: ``python benchmarks/bench_cuda.py [--quick] [--json] [--strict]``.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _measure import bench_arguments, flat_devices, interleaved_samples, medians, paired_ratio
from _cuda_held import DriverError, Gate, batch_size, check as ck, held
from _cuda_peers import Side, cuda_core_side, objects_side
from _cuda_pool import SIZE, TARGET_POOLED, pooled_ns
from _cuda_report import MIB, peer_figures, report

ROOT = Path(__file__).resolve().parents[1]
REAL = os.environ.get("OFFLOAD_CUDA_REAL") == "1"


@dataclass(frozen=True)
class Config:
    repeats: int
    launches: int
    copies: int
    large_copies: int
    large_size: int
    churn: int


FULL = Config(repeats=9, launches=20_000, copies=20_000, large_copies=5, large_size=64 * MIB, churn=5_000)
QUICK = Config(repeats=2, launches=300, copies=300, large_copies=1, large_size=4 * MIB, churn=100)

EXIT_DRIVER_ERROR = 2

TARGET_LAUNCH = 1.2 if REAL else 1.3
TARGET_COPY = 1.5
TARGET_OBJECTS = 1.3  # the object layer's launch over the flat one, declared signature or not
TARGET_BANDWIDTH = 0.97


def _build_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpusim_build", ROOT / "tests" / "simulators" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpusim_build"] = module
    spec.loader.exec_module(module)
    return module


def _ensure_driver() -> None:
    """Re-execute under the simulated driver unless already there (or on a real driver)."""
    if REAL or os.environ.get("BENCH_CUDA_CHILD") == "1":
        return
    build = _build_module()
    kernels = build.gpu_kernels()
    if isinstance(kernels, str):
        print(f"bench_cuda: cannot build the GPU kernels: {kernels}", file=sys.stderr)
        raise SystemExit(0)
    env = build.simulator_env(build.cuda_driver(), kernels)
    env["BENCH_CUDA_CHILD"] = "1"
    env["CUDA_TEST_KERNELS"] = str(kernels.root)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def _kernel_image(name: str) -> bytes:
    root = os.environ.get("CUDA_TEST_KERNELS")
    if root is None:  # a real-driver run builds the images here (nvcc only)
        kernels = _build_module().gpu_kernels(host_builds=False)
        if isinstance(kernels, str):
            raise SystemExit(f"bench_cuda: {kernels}")
        root = str(kernels.root)
    return (Path(root) / f"{name}.cubin").read_bytes()


def _interleaved(variants: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median of each variant's samples (GC off around each); with two variants also ``"ratio"``:
    the median of the per-round ratios first / second."""
    samples = interleaved_samples(variants, repeats, gc_off=True)
    result = medians(samples)
    if len(samples) == 2:
        result["ratio"] = paired_ratio(*samples.values())
    return result


def _with_ratios(samples: dict[str, list[float]], anchor: str) -> dict[str, float]:
    """Each variant's median, and ``<variant>_ratio``: the median of its per-round ratios to
    ``anchor`` (raw cuda.bindings)."""
    result = medians(samples)
    for name, values in samples.items():
        if name != anchor:
            result[f"{name}_ratio"] = paired_ratio(values, samples[anchor])
    return result


def run(config: Config) -> dict[str, Any]:
    import offload as ol
    from cuda.bindings import driver as d

    ol.olInit()
    by_platform: dict[str, list[Any]] = {}
    for dev in flat_devices():
        name = ol.olGetPlatformInfo(ol.olGetDeviceInfo(dev, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME)
        by_platform.setdefault(name, []).append(dev)
    if not by_platform.get("cuda"):
        raise SystemExit("bench_cuda: no CUDA device (is the driver there?)")
    gpu, host = by_platform["cuda"][0], by_platform["host"][0]
    device_name = ol.olGetDeviceInfo(gpu, ol.DeviceInfo.NAME)

    image = _kernel_image("foo")
    program = ol.olCreateProgram(gpu, image)
    foo = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
    out = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
    queue = ol.olCreateQueue(gpu)
    args = struct.pack("P", out)
    size = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1), 0)

    # the raw side: its own module, stream and extra array, on the same (current) context
    module = ck(d.cuModuleLoadData(image))
    function = ck(d.cuModuleGetFunction(module, b"foo"))
    stream = ck(d.cuStreamCreate(1))
    buffer = ctypes.create_string_buffer(args, len(args))
    buffer_size = ctypes.c_size_t(len(args))
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buffer), 2, ctypes.addressof(buffer_size), 0)
    extra_address = ctypes.addressof(extra)

    batch = batch_size()
    n = config.launches
    # Each timed batch of launches runs behind a host function that holds the stream until the
    # batch is enqueued (a deep queue, as on a GPU): the enqueue cost is measured without the
    # simulator's worker executing kernels beside the loop (on 2 cores that skews whichever
    # side is slower). A batch is at most half the push buffer, so the enqueue never blocks.
    gate = Gate()
    held_ol, held_raw = gate.queue(queue), gate.stream(d, stream)

    def ol_launch(count: int) -> None:
        launch = ol.olLaunchKernel
        for _ in range(count):
            launch(queue, gpu, foo, args, size)

    def raw_launch(count: int) -> None:
        launch = d.cuLaunchKernel
        for _ in range(count):
            launch(function, 1, 1, 1, 1, 1, 1, 0, stream, 0, extra_address)  # errors: the sync after reports them

    # 8-byte host-to-device copies: from pinned host memory on every side (an async copy from
    # pageable memory syncs its stream first, as CUDA documents and the simulator models, so it
    # could not be enqueued behind a hold)
    small_address = ol.olMemAlloc(gpu, ol.AllocType.HOST, 8)
    target = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 8)

    # the peers: cuda.core (when installed) and offload's object layer, held the same way
    peers: dict[str, Side] = {"objects": objects_side(image, gpu, gate),
                              "objects_undeclared": objects_side(image, gpu, gate, declared=False)}
    core = cuda_core_side(d, image, out, target, small_address, gate)
    core_missing = core if isinstance(core, str) else None
    if isinstance(core, Side):
        peers["cuda.core"] = core

    def peer_variants(op: str, count: int) -> dict[str, Callable[[], float]]:
        return {
            name: (lambda side=side: held((side.hold, side.release), getattr(side, op), count, batch))
            for name, side in peers.items()
        }

    Loop = Callable[[int], None]

    def held_ns(op: str, count: int, offload: tuple[str, Loop], raw: tuple[str, Loop]) -> dict[str, float]:
        """ns per operation of offload's loop, the raw loop and each peer's ``op``, each enqueued
        ``count`` times behind its held stream, interleaved; with the ratios to the raw loop."""
        (ol_name, ol_loop), (raw_name, raw_loop) = offload, raw
        samples = interleaved_samples(
            {
                ol_name: lambda: held(held_ol, ol_loop, count, batch),
                raw_name: lambda: held(held_raw, raw_loop, count, batch),
                **peer_variants(op, count),
            },
            config.repeats,
            gc_off=True,
        )
        return _with_ratios(samples, raw_name)

    launch_ns = held_ns("launch", n, ("olLaunchKernel", ol_launch), ("cuLaunchKernel", raw_launch))

    m = config.copies

    def ol_copy(count: int) -> None:
        copy = ol.olMemcpy
        for _ in range(count):
            copy(queue, target, gpu, small_address, host, 8)

    def raw_copy(count: int) -> None:
        copy = d.cuMemcpyHtoDAsync
        for _ in range(count):
            copy(target, small_address, 8, stream)

    # the copies are enqueued behind a held stream too, as the launches are: the simulator's
    # worker does not run (and compete for the 2 cores) beside the loop being timed
    copy_ns = held_ns("copy", m, ("olMemcpy", ol_copy), ("cuMemcpyHtoDAsync", raw_copy))
    for side in peers.values():
        side.close()
    pooled = pooled_ns(d, gpu, gate, config.copies // 4, batch, config.repeats)

    # large copies from pinned host memory
    big = config.large_size
    pinned = ol.olMemAlloc(gpu, ol.AllocType.HOST, big)
    device_big = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, big)
    ctypes.memset(pinned, 1, big)

    def ol_big() -> float:
        start = time.perf_counter_ns()
        for _ in range(config.large_copies):
            ol.olMemcpy(queue, device_big, gpu, pinned, gpu, big)
        ol.olSyncQueue(queue)
        return (time.perf_counter_ns() - start) / config.large_copies

    def raw_big() -> float:
        start = time.perf_counter_ns()
        for _ in range(config.large_copies):
            ck(d.cuMemcpyHtoDAsync(device_big, pinned, big, stream))
        ck(d.cuStreamSynchronize(stream))
        return (time.perf_counter_ns() - start) / config.large_copies

    big_ns = _interleaved({"olMemcpy": ol_big, "cuMemcpyHtoDAsync": raw_big}, max(3, config.repeats // 2))

    # queue churn
    c = config.churn

    def ol_churn() -> float:
        start = time.perf_counter_ns()
        for _ in range(c):
            ol.olDestroyQueue(ol.olCreateQueue(gpu))
        return (time.perf_counter_ns() - start) / c

    def raw_churn() -> float:
        start = time.perf_counter_ns()
        for _ in range(c):
            ck(d.cuStreamDestroy(ck(d.cuStreamCreate(1))))
        return (time.perf_counter_ns() - start) / c

    churn_ns = _interleaved(
        {"olCreateQueue+olDestroyQueue": ol_churn, "cuStreamCreate+cuStreamDestroy": raw_churn}, config.repeats
    )

    ck(d.cuStreamDestroy(stream))
    ck(d.cuModuleUnload(module))
    for address in (out, target, small_address, pinned, device_big):
        ol.olMemFree(address)
    ol.olDestroyQueue(queue)
    ol.olDestroyProgram(program)
    ol.olShutDown()

    undeclared = launch_ns["objects_undeclared"] / launch_ns["olLaunchKernel"]
    launch_ratio = launch_ns["olLaunchKernel_ratio"]
    copy_ratio = copy_ns["olMemcpy_ratio"]
    bandwidth_ratio = 1 / big_ns["ratio"]
    checks = [
        {"name": "olLaunchKernel enqueued / raw cuLaunchKernel", "value": launch_ratio, "target": f"<= {TARGET_LAUNCH}",
         "passed": launch_ratio <= TARGET_LAUNCH},
        {"name": "olMemcpy 8 B HtoD / raw cuMemcpyHtoDAsync", "value": copy_ratio, "target": f"<= {TARGET_COPY}",
         "passed": copy_ratio <= TARGET_COPY},
        {"name": "objects launch, no declared signature / olLaunchKernel", "value": undeclared,
         "target": f"<= {TARGET_OBJECTS}", "passed": undeclared <= TARGET_OBJECTS},
    ]  # fmt: skip
    if "objects_vs_cuda_core" in pooled:
        checks.append({"name": f"alloc-use-free {SIZE} B on a queue, objects / cuda.core pooled", "target": f"<= {TARGET_POOLED}",
                       "value": pooled["objects_vs_cuda_core"], "passed": pooled["objects_vs_cuda_core"] <= TARGET_POOLED})  # fmt: skip
    if REAL:
        checks.append(
            {
                "name": f"{big // MIB} MiB pinned HtoD bandwidth / raw",
                "value": bandwidth_ratio,
                "target": f">= {TARGET_BANDWIDTH}",
                "passed": bandwidth_ratio >= TARGET_BANDWIDTH,
            }  # fmt: skip
        )
    return {
        "driver": "real" if REAL else "simulated (tests/simulators)",
        "device": device_name,
        "launch": {"ol_ns": launch_ns["olLaunchKernel"], "raw_ns": launch_ns["cuLaunchKernel"], "ratio": launch_ratio,
                   **peer_figures(launch_ns, "olLaunchKernel")},
        "memcpy_8b": {"ol_ns": copy_ns["olMemcpy"], "raw_ns": copy_ns["cuMemcpyHtoDAsync"], "ratio": copy_ratio,
                      **peer_figures(copy_ns, "olMemcpy")},
        "cuda_core_missing": core_missing,
        "pooled": pooled,
        "memcpy_large": {
            "bytes": big,
            "ol_gbps": big / big_ns["olMemcpy"],
            "raw_gbps": big / big_ns["cuMemcpyHtoDAsync"],
            "ratio": bandwidth_ratio,
        },
        "churn": {
            "ol_queues_per_s": 1e9 / churn_ns["olCreateQueue+olDestroyQueue"],
            "raw_streams_per_s": 1e9 / churn_ns["cuStreamCreate+cuStreamDestroy"],
        },
        "checks": checks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, "tiny counts (a smoke run)")
    args = parser.parse_args(argv)
    _ensure_driver()
    from offload import OffloadError  # after _ensure_driver: the re-executed child loads offload

    try:
        results = run(QUICK if args.quick else FULL)
    except (DriverError, OffloadError) as exc:
        print(f"bench_cuda: driver error, benchmark stopped: {exc}", file=sys.stderr)
        return EXIT_DRIVER_ERROR
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 1 if args.strict and not all(c["passed"] for c in results["checks"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
