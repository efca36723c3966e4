"""The object-layer benchmark still runs: ``benchmarks/bench_objects.py --quick`` in a subprocess."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from helpers import child_environ

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_objects.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = child_environ("OFFLOAD_")
    return subprocess.run([sys.executable, str(SCRIPT), "--quick", *args], capture_output=True, text=True, env=env, timeout=120)


def test_quick_run_reports_every_figure() -> None:
    proc = _run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for text in ("olLaunchKernel enqueued", "queue.launch enqueued, same", "x/y alternating", "packed every time", "kernel.launch sync", "Kernel.pack", "Buffer(64).close()", "Buffer.copy_from", "Array.copy_from(Array)", "summary"):
        assert text in proc.stdout, f"{text!r} missing from:\n{proc.stdout}"
    summary = proc.stdout[proc.stdout.index("summary") :]
    assert summary.count("PASS") + summary.count("FAIL") == 1


def test_quick_json() -> None:
    proc = _run("--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    launch = results["launch"]
    assert launch["flat_enqueued"] > 0 and launch["objects_enqueued"] > 0 and launch["enqueued_ratio"] > 0
    assert launch["sync_ratio"] > 0 and launch["alternating_ratio"] > 0 and launch["packed_ratio"] > 0 and results["pack"]["ratio"] > 0 and results["memory"]["copy_ratio"] > 0 and results["memory"]["array_copy_ratio"] > 0
    assert [c["passed"] in (True, False) for c in results["checks"]] == [True]
