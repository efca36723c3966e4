"""benchmarks/bench_cuda.py still runs (``--quick``; it re-executes itself on the simulator)."""

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
    assert [c["passed"] in (True, False) for c in results["checks"]] == [True, True]
