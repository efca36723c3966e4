"""bench_host's verdicts (its targets) and the readable report it prints without ``--json``."""

from __future__ import annotations

from typing import Any

from _measure import Check
from _saxpy_limit import TARGET_SAXPY_RATIO

__all__ = ["checks", "report"]

MIB = 1 << 20
TARGET_LAUNCH_RATIO = 4.0  # olLaunchKernel sync <= 4x bare ctypes (issues 5 and 8)
TARGET_ENQUEUED_RATIO = 8.0  # olLaunchKernel enqueued <= 8x bare ctypes (issue 8)
TARGET_MEMCPY_RATIO = 0.9  # 64 MiB olMemcpy >= 0.9x memmove throughput
TARGET_TRACING_PCT = 2.0  # tracing off <= 2% slower than compiled out (issue 8)


def checks(results: dict[str, Any]) -> list[Check]:
    launch, memcpy, tracing, saxpy = results["launch"], results["memcpy"], results["tracing"], results["saxpy"]
    saxpy_check = [] if "skipped" in saxpy else [
        Check("saxpy / C OpenMP loop", saxpy["ratio"], f"<= {TARGET_SAXPY_RATIO:g}x", saxpy["ratio"] <= TARGET_SAXPY_RATIO)
    ]
    return [
        Check(
            "olLaunchKernel sync / bare ctypes",
            launch["sync_ratio"],
            f"<= {TARGET_LAUNCH_RATIO:g}x",
            launch["sync_ratio"] <= TARGET_LAUNCH_RATIO,
        ),
        Check(
            "olLaunchKernel enqueued / bare ctypes",
            launch["enqueued_ratio"],
            f"<= {TARGET_ENQUEUED_RATIO:g}x",
            launch["enqueued_ratio"] <= TARGET_ENQUEUED_RATIO,
        ),
        Check(
            f"olMemcpy {results['memcpy']['large_size'] // MIB} MiB / memmove throughput",
            memcpy["large_throughput_ratio"],
            f">= {TARGET_MEMCPY_RATIO:g}x",
            memcpy["large_throughput_ratio"] >= TARGET_MEMCPY_RATIO,
        ),
        Check(
            "tracing off vs compiled out (olQueryQueue) %",
            tracing["query_overhead_pct"],
            f"<= {TARGET_TRACING_PCT:g}%",
            tracing["query_overhead_pct"] <= TARGET_TRACING_PCT,
        ),
    ] + saxpy_check


def _saxpy_lines(saxpy: dict[str, Any]) -> list[str]:
    if "skipped" in saxpy:
        return ["saxpy vs the C OpenMP loop: skipped: " + saxpy["skipped"]]
    return [
        f"saxpy (2^{saxpy['n'].bit_length() - 1} floats, same buffers; OMP_WAIT_POLICY={saxpy['omp_wait_policy']})",
        f"  offload saxpy + sync       {saxpy['offload_ns'] / 1e6:10.2f} ms        {saxpy['offload_gbps']:8.2f} GB/s",
        f"  C OpenMP loop              {saxpy['openmp_ns'] / 1e6:10.2f} ms        {saxpy['openmp_gbps']:8.2f} GB/s"
        f"   (offload {saxpy['ratio']:.2f}x time, median of paired rounds)",
    ]


def report(results: dict[str, Any], verdicts: list[Check]) -> str:
    launch, memcpy, churn, tracing = (results[k] for k in ("launch", "memcpy", "churn", "tracing"))
    large_mib = memcpy["large_size"] // MIB
    lines = [
        f"offload host benchmarks ({results['mode']}, {results['cpus']} CPUs, medians of interleaved repeats)",
        "",
        f"launch (noargs, 1x1; {launch['calls_per_sample']} calls/sample)",
        f"  bare ctypes call           {launch['bare_ctypes_ns']:10.0f} ns/call",
        f"  olLaunchKernel sync        {launch['sync_ns']:10.0f} ns/call   {launch['sync_ratio']:6.2f}x bare",
        f"  olLaunchKernel enqueued    {launch['enqueued_ns']:10.0f} ns/call   {launch['enqueued_ratio']:6.2f}x bare (amortised)",
        "",
        "memcpy (host to host, synchronous)",
        f"  {'olMemcpy 8 B':<26} {memcpy['small_olmemcpy_ns']:10.0f} ns       {memcpy['small_olmemcpy_gbps']:8.3f} GB/s",
        f"  {'memmove 8 B':<26} {memcpy['small_memmove_ns']:10.0f} ns       {memcpy['small_memmove_gbps']:8.3f} GB/s"
        f"   ({memcpy['small_time_ratio']:.2f}x time)",
        f"  {f'olMemcpy {large_mib} MiB':<26} {memcpy['large_olmemcpy_ns']:10.0f} ns       "
        f"{memcpy['large_olmemcpy_gbps']:8.3f} GB/s",
        f"  {f'memmove {large_mib} MiB':<26} {memcpy['large_memmove_ns']:10.0f} ns       "
        f"{memcpy['large_memmove_gbps']:8.3f} GB/s   ({memcpy['large_throughput_ratio']:.2f}x throughput)",
        "",
        f"queue churn (create + 1 launch + destroy; {churn['queues_per_sample']} queues/sample)",
        f"  rate                       {churn['queues_per_s']:10.0f} queues/s",
        f"  parked queues              peak {churn['peak_parked']}, after {churn['parked_after']}",
        f"  threads                    before {churn['threads_before']}, peak {churn['threads_peak']}, "
        f"after {churn['threads_after']}",
        f"  RSS                        before {churn['rss_before_kib']} KiB, after {churn['rss_after_kib']} KiB "
        f"({churn['rss_after_kib'] - churn['rss_before_kib']:+d} KiB)",
        "",
        *_saxpy_lines(results["saxpy"]),
        "",
        f"tracing off vs compiled out ({tracing['calls_per_sample']} calls/sample; overhead: median of paired rounds)",
        f"  olQueryQueue               {tracing['query_tracing_off_ns']:8.0f} vs {tracing['query_compiled_out_ns']:8.0f} ns"
        f"   {tracing['query_overhead_pct']:+6.2f}%",
        f"  olGetDeviceInfo(TYPE)      {tracing['info_tracing_off_ns']:8.0f} vs {tracing['info_compiled_out_ns']:8.0f} ns"
        f"   {tracing['info_overhead_pct']:+6.2f}%",
        "",
        "summary",
    ]
    for check in verdicts:
        lines.append(f"  {check.name:<48} {check.value:8.2f}  target {check.target:<8} {'PASS' if check.passed else 'FAIL'}")
    lines.append(f"  elapsed {results['elapsed_s']:.1f} s")
    return "\n".join(lines)
