"""The object layer's overhead over the flat ol* API, measured in one run on the host device.

Sections (variants timed in interleaved repeats, GC off while timing; medians, and ratios as the
median of per-round ratios so that drift between rounds cancels out):

* launch    ``queue.launch(saxpy, 1, 1, 2.0, x, y, 1)`` (arguments packed from Python values and
            Arrays by the kernel's layout; the packing is compiled once per kernel, and the
            packed buffers of the kernel's last two launches are reused for equal arguments)
            against the flat ``olLaunchKernel`` with a prebuilt argument buffer and launch size,
            N launches then one sync; the same with x and y swapped every launch (the launch
            before the last reused); with y taking three Arrays in turn (packed every time); and
            the synchronous ``kernel.launch(...)`` against ``olLaunchKernel(None, ...)``.
            Target: enqueued object launch <= 1.5x flat (issue 18: 1.3x).
* pack      ``Kernel.pack`` of four arguments against ``struct.pack`` of the already-converted values.
* memory    ``Buffer(64).close()`` against ``olMemAlloc`` + ``olMemFree``; ``Buffer.copy_from`` of
            a prebuilt host Buffer (8 B, on a queue), and ``Array.copy_from`` of a float32 view
            of it, against ``olMemcpy`` on it; ``Buffer.copy_from`` of
            8 B of numpy against ``olMemcpy`` from a known address (reported only).

Usage: ``python benchmarks/bench_objects.py [--quick] [--json] [--strict]`` (as bench_host.py).
"""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import offload
import offload_host
from offload import AllocType

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _measure import bench_arguments, call_loop, exit_on_error, interleaved_samples, log, medians, paired_ratio  # noqa: E402

SIGNATURE = "float a, const float *x, float *y, uint64_t n"
TARGET_LAUNCH_RATIO = 1.5


@dataclass(frozen=True)
class Config:
    repeats: int
    launches: int  # launches per sample
    packs: int
    allocs: int


FULL = Config(repeats=31, launches=2_000, packs=20_000, allocs=5_000)
QUICK = Config(repeats=2, launches=300, packs=1_000, allocs=200)


def _timed(
    body: Callable[[int], None], calls: int, after: Callable[[], None] | None = None, per: int = 1
) -> Callable[[], float]:
    """A sample: ns per call of ``body(calls)``, which makes ``per`` calls a round (then ``after()``,
    inside the timing)."""
    import gc
    import time

    def sample() -> float:
        enabled = gc.isenabled()
        gc.disable()
        try:
            start = time.perf_counter_ns()
            body(calls)
            if after is not None:
                after()
            return (time.perf_counter_ns() - start) / (calls * per)
        finally:
            if enabled:
                gc.enable()

    return sample


def _in_turn(queue: Any, kernel: Any, turns: list[tuple[str, str]], config: Config, **arrays: Any) -> Callable[[], float]:
    """A sample of ``queue.launch(kernel, 1, 1, 2.0, x, y, 1)`` with the (x, y) Arrays of ``turns``
    in turn, then one sync: ns per launch."""
    calls = "; ".join(f"launch(kernel, 1, 1, 2.0, {x}, {y}, 1)" for x, y in turns)
    body = call_loop(calls, launch=queue.launch, kernel=kernel, **arrays)
    return _timed(body, config.launches // len(turns), queue.sync, per=len(turns))


def run(config: Config) -> dict[str, Any]:
    device = offload.devices("host")[0]
    program = device.load_program(offload_host.build_test_kernel("saxpy"))
    kernel = program.kernel("saxpy", SIGNATURE)
    x = offload.to_device(np.ones(16, np.float32), device)
    y = offload.to_device(np.zeros(16, np.float32), device)
    z, w = (offload.to_device(np.zeros(16, np.float32), device) for _ in range(2))
    queue = device.queue()
    prebuilt = kernel.pack(2.0, x, y, 1)
    one_item = kernel.launch_size(1, 1)
    flat_launch = offload.olLaunchKernel
    handles = {"qh": queue.handle, "dh": device.handle, "kh": kernel.handle, "args": prebuilt, "size": one_item}
    results: dict[str, Any] = {}

    log("launch ...")
    samples = interleaved_samples(
        {
            "flat_enqueued": _timed(
                call_loop("launch(qh, dh, kh, args, size)", launch=flat_launch, **handles), config.launches, queue.sync
            ),
            "objects_enqueued": _in_turn(queue, kernel, [("x", "y")], config, x=x, y=y),
            "objects_enqueued_alternating": _in_turn(queue, kernel, [("x", "y"), ("y", "x")], config, x=x, y=y),
            "objects_enqueued_packed": _in_turn(queue, kernel, [("x", "y"), ("x", "z"), ("x", "w")], config, x=x, y=y, z=z, w=w),
            "flat_sync": _timed(
                call_loop("launch(None, dh, kh, args, size)", launch=flat_launch, dh=device.handle, kh=kernel.handle, args=prebuilt, size=one_item),
                config.launches,
            ),
            "objects_sync": _timed(
                call_loop("launch(1, 1, 2.0, x, y, 1)", launch=kernel.launch, x=x, y=y), config.launches
            ),
        },
        config.repeats,
    )
    results["launch"] = medians(samples)
    results["launch"]["enqueued_ratio"] = paired_ratio(samples["objects_enqueued"], samples["flat_enqueued"])
    results["launch"]["sync_ratio"] = paired_ratio(samples["objects_sync"], samples["flat_sync"])
    results["launch"]["alternating_ratio"] = paired_ratio(samples["objects_enqueued_alternating"], samples["flat_enqueued"])
    results["launch"]["packed_ratio"] = paired_ratio(samples["objects_enqueued_packed"], samples["flat_enqueued"])

    log("pack ...")
    converted = (2.0, x.address, y.address, 1)
    samples = interleaved_samples(
        {
            "struct_pack": _timed(call_loop("pack('=f4xQQQ', *values)", pack=struct.pack, values=converted), config.packs),
            "kernel_pack": _timed(call_loop("pack(2.0, x, y, 1)", pack=kernel.pack, x=x, y=y), config.packs),
        },
        config.repeats,
    )
    results["pack"] = medians(samples)
    results["pack"]["ratio"] = paired_ratio(samples["kernel_pack"], samples["struct_pack"])

    log("memory ...")
    host = offload.olMemAlloc(device.handle, AllocType.HOST, 8)
    source = np.arange(2, dtype=np.float32)
    host_buffer = offload.Buffer(8, device, kind=AllocType.HOST)  # a prebuilt source Buffer
    samples = interleaved_samples(
        {
            "flat_alloc_free": _timed(
                call_loop("free(alloc(dh, kind, 64))", alloc=offload.olMemAlloc, free=offload.olMemFree, dh=device.handle, kind=AllocType.DEVICE),
                config.allocs,
            ),
            "buffer_alloc_close": _timed(call_loop("Buffer(64, dev).close()", Buffer=offload.Buffer, dev=device), config.allocs),
            "flat_copy_8B": _timed(
                call_loop("copy(None, dst, dh, src, dh, 8)", copy=offload.olMemcpy, dst=x.address, src=host, dh=device.handle),
                config.allocs,
            ),
            "buffer_copy_from_8B": _timed(call_loop("copy(source)", copy=x.buffer.copy_from, source=source), config.allocs),
            "flat_copy_8B_queued": _timed(
                call_loop("copy(qh, dst, dh, src, dh, 8)", copy=offload.olMemcpy, qh=queue.handle, dst=x.address, src=host, dh=device.handle),
                config.allocs,
                queue.sync,
            ),
            "buffer_copy_from_buffer_8B_queued": _timed(
                call_loop("copy(source, queue=q)", copy=x.buffer.copy_from, source=host_buffer, q=queue), config.allocs, queue.sync
            ),
            "array_copy_from_array_8B_queued": _timed(
                call_loop("copy(source, queue=q)", copy=x.buffer.view(np.float32, 2).copy_from, source=host_buffer.view(np.float32), q=queue),
                config.allocs,
                queue.sync,
            ),
        },
        config.repeats,
    )
    offload.olMemFree(host)
    host_buffer.close()
    results["memory"] = medians(samples)
    results["memory"]["alloc_ratio"] = paired_ratio(samples["buffer_alloc_close"], samples["flat_alloc_free"])
    results["memory"]["copy_ratio"] = paired_ratio(samples["buffer_copy_from_8B"], samples["flat_copy_8B"])
    results["memory"]["buffer_copy_ratio"] = paired_ratio(
        samples["buffer_copy_from_buffer_8B_queued"], samples["flat_copy_8B_queued"]
    )
    results["memory"]["array_copy_ratio"] = paired_ratio(samples["array_copy_from_array_8B_queued"], samples["flat_copy_8B_queued"])

    queue.close()
    program.close()
    ratio = results["launch"]["enqueued_ratio"]
    results["checks"] = [
        {
            "name": "queue.launch / flat olLaunchKernel (enqueued)",
            "value": ratio,
            "target": f"<= {TARGET_LAUNCH_RATIO}",
            "passed": ratio <= TARGET_LAUNCH_RATIO,
        }
    ]
    return results


def report(results: dict[str, Any]) -> str:
    launch, pack, memory = results["launch"], results["pack"], results["memory"]
    lines = [
        "launch (saxpy, 1 item; ns per launch, median)",
        f"  olLaunchKernel enqueued, prebuilt args   {launch['flat_enqueued']:9.0f} ns",
        f"  queue.launch enqueued, same arguments    {launch['objects_enqueued']:9.0f} ns   {launch['enqueued_ratio']:.2f}x",
        f"  queue.launch enqueued, x/y alternating   {launch['objects_enqueued_alternating']:9.0f} ns   {launch['alternating_ratio']:.2f}x",
        f"  queue.launch enqueued, packed every time {launch['objects_enqueued_packed']:9.0f} ns   {launch['packed_ratio']:.2f}x",
        f"  olLaunchKernel sync, prebuilt args       {launch['flat_sync']:9.0f} ns",
        f"  kernel.launch sync, same arguments       {launch['objects_sync']:9.0f} ns   {launch['sync_ratio']:.2f}x",
        "pack (4 arguments)",
        f"  struct.pack of converted values          {pack['struct_pack']:9.0f} ns",
        f"  Kernel.pack of Python values, Buffers    {pack['kernel_pack']:9.0f} ns   {pack['ratio']:.2f}x",
        "memory",
        f"  olMemAlloc + olMemFree                   {memory['flat_alloc_free']:9.0f} ns",
        f"  Buffer(64).close()                       {memory['buffer_alloc_close']:9.0f} ns   {memory['alloc_ratio']:.2f}x",
        f"  olMemcpy 8 B                             {memory['flat_copy_8B']:9.0f} ns",
        f"  Buffer.copy_from(numpy) 8 B              {memory['buffer_copy_from_8B']:9.0f} ns   {memory['copy_ratio']:.2f}x",
        f"  olMemcpy 8 B on a queue                  {memory['flat_copy_8B_queued']:9.0f} ns",
        f"  Buffer.copy_from(Buffer) 8 B on a queue  {memory['buffer_copy_from_buffer_8B_queued']:9.0f} ns   {memory['buffer_copy_ratio']:.2f}x",
        f"  Array.copy_from(Array) 8 B on a queue    {memory['array_copy_from_array_8B_queued']:9.0f} ns   {memory['array_copy_ratio']:.2f}x",
        "summary",
    ]
    for check in results["checks"]:
        verdict = "PASS" if check["passed"] else "FAIL"
        lines.append(f"  {verdict}  {check['name']}: {check['value']:.2f}x (target {check['target']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, "tiny counts: a smoke run")
    args = parser.parse_args(argv)
    results = run(QUICK if args.quick else FULL)
    print(json.dumps(results, indent=2) if args.json else report(results))
    if args.strict and not all(c["passed"] for c in results["checks"]):
        return 1
    return 0


if __name__ == "__main__":
    exit_on_error(main, "bench_objects")
