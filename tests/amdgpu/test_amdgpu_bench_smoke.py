"""benchmarks/bench_amdgpu.py still runs (``--quick --json``, in a child process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from helpers import child_environ

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_amdgpu.py"


def test_quick_run_reports_every_ratio(clang: str) -> None:
    env = child_environ(("OFFLOAD_", "GPUSIM_"))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)
    assert set(results["ratios"]) == {
        "olLaunchKernel / hipModuleLaunchKernel",
        "olLaunchKernel / hipModuleLaunchKernel (8 B args)",
        "olMemcpy 8 B / hipMemcpyHtoDAsync",
    }
    assert all(ratio > 0 for ratio in results["ratios"].values())
    assert len(results["ns_per_call"]) == 6
    assert len(results["breakdown"]) == 2 and all(ratio > 0 for ratio in results["breakdown"].values())


def test_batches_stay_under_the_push_buffer(clang: str) -> None:
    """Every call is made behind a blocking gate: a batch larger than the stream's push buffer would
    block its enqueuing call behind its own gate forever (the timeout is only a hang guard)."""
    env = child_environ(("OFFLOAD_", "GPUSIM_"))
    env["GPUSIM_PUSH_BUFFER"] = "128"  # 500 quick calls per measurement: several batches each
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(ratio > 0 for ratio in json.loads(proc.stdout)["ratios"].values())
