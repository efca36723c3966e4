"""Micro-benchmarks of offload's host (CPU) backend, measured in one run.

Sections (each compares its variants in interleaved repeats and reports medians):

* launch   ``olLaunchKernel`` of the no-op ``noargs`` kernel (1 group of 1 item): synchronous
           (queue=None) and enqueued (N launches, one ``olSyncQueue``, amortised), against a bare
           ctypes call of the same kernel function. Targets: sync <= 4x, enqueued <= 8x bare ctypes.
* memcpy   synchronous host-to-host ``olMemcpy`` of 8 B and 64 MiB against ``ctypes.memmove``.
           Target: 64 MiB throughput >= 0.9x memmove.
* churn    ``olCreateQueue`` + one enqueued launch + ``olDestroyQueue``, N times: queues/s, the
           peak number of parked queues, live threads and the process RSS before/after.
* saxpy    ``y = a*x + y`` over 2^24 floats with offload's shipped ``saxpy`` (launch + sync) against
           the bandwidth limit, a bare C OpenMP loop (``-O3 -march=native -fopenmp``,
           ``OMP_WAIT_POLICY=passive``) on the same buffers (``_saxpy_limit.py``). Target: <= 1.15x.
* tracing  a cheap call (``olQueryQueue``; also ``olGetDeviceInfo(TYPE)``) through the normal
           entry points (tracing off) against ``offload._api.functions.generate(trace=False)``
           (tracing compiled out), as the median of per-round ratios. Target: overhead <= 2%.

Usage: ``python benchmarks/bench_host.py [--quick] [--json] [--strict]``. ``--json`` prints only
the results document on stdout; ``--strict`` exits 1 when a target is missed (default: always 0).
"""

from __future__ import annotations

import os
import time
from typing import Any

import offload as ol
from _host_report import checks, report
from _host_sections import FULL, QUICK, Config, bench_churn, bench_launch, bench_memcpy, bench_tracing, setup
from _measure import bench_arguments, exit_on_error, finish, log
from _saxpy_limit import bench_saxpy

def run(cfg: Config, mode: str, quiet: bool) -> dict[str, Any]:
    started = time.perf_counter()
    ol.olInit()
    try:
        env = setup()
        results: dict[str, Any] = {"mode": mode, "cpus": len(os.sched_getaffinity(0))}
        for name, bench in (("launch", bench_launch), ("memcpy", bench_memcpy), ("churn", bench_churn), ("tracing", bench_tracing)):
            if not quiet:
                log(f"bench_host: {name} ...")
            results[name] = bench(env, cfg)
        if not quiet:
            log("bench_host: saxpy ...")
        results["saxpy"] = bench_saxpy(env.device, cfg.saxpy_n, cfg.saxpy_runs, cfg.saxpy_repeats)
        ol.olDestroyProgram(env.program)
    finally:
        ol.olShutDown()
    results["elapsed_s"] = time.perf_counter() - started
    return results


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, "tiny repeat counts (a smoke run, a few seconds)")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    results = run(QUICK if args.quick else FULL, mode, quiet=args.json)
    return finish(results, checks(results), report, args)


if __name__ == "__main__":
    exit_on_error(main, "bench_host")
