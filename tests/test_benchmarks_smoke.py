"""The benchmark script still runs: ``benchmarks/bench_host.py --quick`` in a subprocess."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_host.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_quick_run_prints_every_metric() -> None:
    proc = _run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for text in (
        "bare ctypes call",
        "olLaunchKernel sync",
        "olLaunchKernel enqueued",
        "olMemcpy 8 B",
        "memmove 8 B",
        "x throughput",
        "queues/s",
        "parked queues",
        "RSS",
        "olQueryQueue",
        "olGetDeviceInfo(TYPE)",
        "summary",
        "olLaunchKernel sync / bare ctypes",
        "/ memmove throughput",
        "tracing off vs compiled out",
    ):
        assert text in out, f"{text!r} missing from:\n{out}"
    summary = out[out.index("summary") :]
    assert summary.count("PASS") + summary.count("FAIL") == 3


def test_quick_json() -> None:
    proc = _run("--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert results["launch"]["sync_ns"] > 0 and results["launch"]["bare_ctypes_ns"] > 0
    assert results["launch"]["enqueued_ns"] > 0
    assert results["memcpy"]["large_throughput_ratio"] > 0
    assert results["churn"]["queues_per_s"] > 0 and results["churn"]["rss_after_kib"] >= 0
    assert "query_overhead_pct" in results["tracing"]
    assert [c["passed"] in (True, False) for c in results["checks"]] == [True, True, True]
