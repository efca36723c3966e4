"""benchmarks/bench_cuda.py still runs (``--quick``; it re-executes itself on the simulator), with
its peers: cuda.core (when installed) and offload's object layer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cuda.py"


def test_quick_json(kernels: Any, child_env: Any, simulated: Any) -> None:
    env = {k: v for k, v in child_env().items() if k != "LD_LIBRARY_PATH"}  # the script finds the simulator itself
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)
    assert results["driver"].startswith("simulated")
    assert results["launch"]["ol_ns"] > 0 and results["launch"]["raw_ns"] > 0 and results["launch"]["ratio"] > 0
    assert results["memcpy_8b"]["ratio"] > 0 and results["memcpy_large"]["ol_gbps"] > 0
    assert results["churn"]["ol_queues_per_s"] > 0
    core = results["cuda_core_missing"] is None  # the pooled-allocation check needs cuda.core
    assert [c["passed"] in (True, False) for c in results["checks"]] == [True] * (4 if core else 3)
    assert results["launch"]["undeclared_ns"] > 0 and results["launch"]["undeclared_vs_flat"] > 0  # no signature declared
    pooled = results["pooled"]  # the allocate-use-free loop: raw, flat, objects, and cuda.core's pool
    assert pooled["raw"] > 0 and pooled["flat_ratio"] > 0 and pooled["objects_ratio"] > 0
    assert (pooled["objects_vs_cuda_core"] > 0) if core else "cuda.core" not in pooled
    # the peers: offload's object layer always, cuda.core when installed (scripts/test.sh installs it)
    for key in ("launch", "memcpy_8b"):
        figures = results[key]
        assert figures["objects_ns"] > 0 and figures["objects_ratio"] > 0 and figures["objects_vs_flat"] > 0
        if results["cuda_core_missing"] is None:
            assert figures["cuda_core_ns"] > 0 and figures["cuda_core_ratio"] > 0 and figures["flat_vs_cuda_core"] > 0
        else:
            assert "cuda.core" in results["cuda_core_missing"] and "cuda_core_ns" not in figures


def test_batches_stay_under_a_small_push_buffer(kernels: Any, child_env: Any, simulated: Any) -> None:
    """With a push buffer of 64 the held batches must be smaller, or an enqueue blocks behind the
    hold until its 300 s gate times out (the run then exceeds the timeout below)."""
    env = {k: v for k, v in child_env().items() if k != "LD_LIBRARY_PATH"}
    env["GPUSIM_PUSH_BUFFER"] = "64"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, env=env, timeout=240
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["launch"]["ratio"] > 0


def test_a_driver_error_ends_the_run_with_a_message(kernels: Any, child_env: Any, simulated: Any) -> None:
    """GPUSIM_FAULT_AFTER makes the 50th device operation fault (sticky ILLEGAL_ADDRESS): the
    benchmark stops with one message and exit status 2, promptly, instead of a traceback or a hang."""
    env = {k: v for k, v in child_env().items() if k != "LD_LIBRARY_PATH"}
    env["GPUSIM_FAULT_AFTER"] = "50"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "bench_cuda: driver error, benchmark stopped:" in proc.stderr
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
