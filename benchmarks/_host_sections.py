"""bench_host's sections: each times its variants on the host device in interleaved repeats and
returns its figures (medians; ratios as the report states them). What each measures, and its
target, is in bench_host.py's docstring."""

from __future__ import annotations

import ctypes
import gc
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import offload as ol
from offload._api.functions import generate
from offload_host._cooperative import _Dim3, _Group  # the backend's own ctypes form of offload_group_t
from _measure import call_loop, flat_devices, interleaved, interleaved_samples, medians, ns_per, paired_ratio, rss_kib

__all__ = ["FULL", "QUICK", "Config", "Env", "bench_churn", "bench_launch", "bench_memcpy", "bench_tracing", "setup"]

MIB = 1 << 20


@dataclass(frozen=True)
class Config:
    repeats: int
    launch_calls: int  # calls per timed launch sample
    small_copies: int  # 8 B copies per sample
    large_copies: int  # 64 MiB copies per sample
    large_size: int
    churn_queues: int  # queues per churn sample
    churn_repeats: int
    cheap_calls: int  # calls per tracing sample
    tracing_repeats: int
    saxpy_n: int  # floats of the saxpy section
    saxpy_runs: int  # saxpys per sample
    saxpy_repeats: int


#: Each count of a full run and of a quick one (a smoke run of a few seconds).
_COUNTS = {
    "repeats": (9, 2),
    "launch_calls": (50_000, 500),
    "small_copies": (100_000, 1_000),
    "large_copies": (5, 1),
    "large_size": (64 * MIB, 4 * MIB),
    "churn_queues": (5_000, 100),
    "churn_repeats": (5, 1),
    "cheap_calls": (20_000, 1_000),
    "tracing_repeats": (101, 3),
    "saxpy_n": (1 << 24, 1 << 12),
    "saxpy_runs": (5, 2),
    "saxpy_repeats": (9, 2),
}
FULL = Config(**{name: full for name, (full, _) in _COUNTS.items()})
QUICK = Config(**{name: quick for name, (_, quick) in _COUNTS.items()})


KernelFunction = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


# --- measurement helpers -------------------------------------------------------------------------


def _per_call_ns(body: Callable[[int], None], calls: int) -> float:
    """ns per call of ``body(calls)``, which makes ``calls`` calls."""
    return ns_per(lambda: body(calls), calls)


def paired_overhead_pct(slow: list[float], fast: list[float]) -> float:
    """The median over rounds of ``slow / fast - 1`` in %: drift between rounds cancels out."""
    return 100.0 * (paired_ratio(slow, fast) - 1.0)


# --- the session ---------------------------------------------------------------------------------


@dataclass
class Env:
    device: ol.DeviceHandle
    kernel: ol.SymbolHandle
    program: ol.ProgramHandle
    one_item: ol.KernelLaunchSizeArgs


def _host_device() -> ol.DeviceHandle:
    for device in flat_devices():
        platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
        if ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST:
            return device
    raise SystemExit("bench_host: no host device (is offload-host installed?)")


def setup() -> Env:
    from offload_host import build_test_kernel

    device = _host_device()
    program = ol.olCreateProgram(device, build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    return Env(device, kernel, program, ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)))


# --- launch --------------------------------------------------------------------------------------


def bench_launch(env: Env, cfg: Config) -> dict[str, Any]:
    device, kernel, size = env.device, env.kernel, env.one_item
    launch = ol.olLaunchKernel
    address = kernel.native  # the host backend's kernel is its function address
    bare = KernelFunction(address)
    group = _Group(_Dim3(0, 0, 0), _Dim3(1, 1, 1), _Dim3(1, 1, 1), None, 0)
    group_ref = ctypes.byref(group)
    queue = ol.olCreateQueue(device)
    sync_queue = ol.olSyncQueue

    def bare_calls(n: int) -> None:
        for _ in range(n):
            bare(None, group_ref)

    def sync_launches(n: int) -> None:
        for _ in range(n):
            launch(None, device, kernel, None, size)

    def queued_launches(n: int) -> None:
        for _ in range(n):
            launch(queue, device, kernel, None, size)
        sync_queue(queue)

    calls = cfg.launch_calls
    try:
        queued_launches(10)  # start the queue's worker thread outside the timings
        medians = interleaved(
            {
                "bare_ctypes_ns": lambda: _per_call_ns(bare_calls, calls),
                "sync_ns": lambda: _per_call_ns(sync_launches, calls),
                "enqueued_ns": lambda: _per_call_ns(queued_launches, calls),
            },
            cfg.repeats,
        )
    finally:
        ol.olDestroyQueue(queue)
    return {
        **medians,
        "calls_per_sample": calls,
        "sync_ratio": medians["sync_ns"] / medians["bare_ctypes_ns"],
        "enqueued_ratio": medians["enqueued_ns"] / medians["bare_ctypes_ns"],
    }


# --- memcpy --------------------------------------------------------------------------------------


def _copy_variants(env: Env, size: int, copies: int, prefix: str) -> tuple[dict[str, Callable[[], float]], list[Any]]:
    device, memcpy, memmove = env.device, ol.olMemcpy, ctypes.memmove
    src = (ctypes.c_char * size)()
    dst = (ctypes.c_char * size)()
    ctypes.memset(src, 0x5A, size)  # touch every page before timing
    ctypes.memset(dst, 0, size)
    s, d = ctypes.addressof(src), ctypes.addressof(dst)

    def offload_copies(n: int) -> None:
        for _ in range(n):
            memcpy(None, d, device, s, device, size)

    def memmove_copies(n: int) -> None:
        for _ in range(n):
            memmove(d, s, size)

    variants = {
        f"{prefix}_olmemcpy_ns": lambda: _per_call_ns(offload_copies, copies),
        f"{prefix}_memmove_ns": lambda: _per_call_ns(memmove_copies, copies),
    }
    return variants, [src, dst]


def bench_memcpy(env: Env, cfg: Config) -> dict[str, Any]:
    small, keep_small = _copy_variants(env, 8, cfg.small_copies, "small")
    large, keep_large = _copy_variants(env, cfg.large_size, cfg.large_copies, "large")
    medians = interleaved({**small, **large}, cfg.repeats)
    del keep_small, keep_large
    large_ol = cfg.large_size / medians["large_olmemcpy_ns"]  # bytes/ns == GB/s
    large_mm = cfg.large_size / medians["large_memmove_ns"]
    return {
        **medians,
        "small_size": 8,
        "large_size": cfg.large_size,
        "small_olmemcpy_gbps": 8 / medians["small_olmemcpy_ns"],
        "small_memmove_gbps": 8 / medians["small_memmove_ns"],
        "large_olmemcpy_gbps": large_ol,
        "large_memmove_gbps": large_mm,
        "small_time_ratio": medians["small_olmemcpy_ns"] / medians["small_memmove_ns"],
        "large_throughput_ratio": large_ol / large_mm,
    }


# --- queue churn ---------------------------------------------------------------------------------


def bench_churn(env: Env, cfg: Config) -> dict[str, Any]:
    device, kernel, size = env.device, env.kernel, env.one_item
    create, destroy, launch = ol.olCreateQueue, ol.olDestroyQueue, ol.olLaunchKernel
    active_count = threading.active_count
    peak = {"parked": 0, "threads": active_count()}

    def churn(n: int) -> None:
        for _ in range(n):
            queue = create(device)
            launch(queue, device, kernel, None, size)
            destroy(queue)
            parked = len(device.parked)  # the core's parked (destroyed while busy) queues
            if parked > peak["parked"]:
                peak["parked"] = parked
            threads = active_count()
            if threads > peak["threads"]:
                peak["threads"] = threads

    gc.collect()
    rss_before, threads_before = rss_kib(), threading.active_count()
    rates = []
    for _ in range(cfg.churn_repeats):
        ns = _per_call_ns(churn, cfg.churn_queues)
        rates.append(1e9 / ns)
    time.sleep(0.05)  # let the last queues' work finish
    gc.collect()
    return {
        "queues_per_s": statistics.median(rates),
        "queues_per_sample": cfg.churn_queues,
        "peak_parked": peak["parked"],
        "parked_after": len(device.parked),
        "threads_before": threads_before,
        "threads_peak": peak["threads"],
        "threads_after": threading.active_count(),
        "rss_before_kib": rss_before,
        "rss_after_kib": rss_kib(),
    }


# --- tracing -------------------------------------------------------------------------------------


def bench_tracing(env: Env, cfg: Config) -> dict[str, Any]:
    device = env.device
    compiled_out = generate(trace=False)
    off_query, out_query = ol.olQueryQueue, compiled_out["olQueryQueue"]
    off_info, out_info = ol.olGetDeviceInfo, compiled_out["olGetDeviceInfo"]
    queue = ol.olCreateQueue(device)
    prop = ol.DeviceInfo.TYPE

    calls = cfg.cheap_calls
    try:
        loops = {
            "query_tracing_off_ns": call_loop("fn(queue)", fn=off_query, queue=queue),
            "query_compiled_out_ns": call_loop("fn(queue)", fn=out_query, queue=queue),
            "info_tracing_off_ns": call_loop("fn(device, prop)", fn=off_info, device=device, prop=prop),
            "info_compiled_out_ns": call_loop("fn(device, prop)", fn=out_info, device=device, prop=prop),
        }
        samples = interleaved_samples(
            {name: (lambda body=body: _per_call_ns(body, calls)) for name, body in loops.items()}, cfg.tracing_repeats
        )
    finally:
        ol.olDestroyQueue(queue)
    return {
        **medians(samples),
        "calls_per_sample": calls,
        "query_overhead_pct": paired_overhead_pct(samples["query_tracing_off_ns"], samples["query_compiled_out_ns"]),
        "info_overhead_pct": paired_overhead_pct(samples["info_tracing_off_ns"], samples["info_compiled_out_ns"]),
    }
