"""benchmarks/bench_capi.py still runs (--quick, in a child) and reports every figure and ratio; no
timed assertion: the figures are information."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import Capi

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_capi.py"


def test_quick_run_reports_every_figure(capi: Capi) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True,
                          env=capi.env(), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skipped" in result:
        return
    for key in ("init_ms", "init_cpu_ms", "init_drivers_ms", "backends", "info_ns", "python_info_ns", "launch_ns", "python_launch_ns",
                "launch_ratio", "targets"):
        assert key in result, result
    assert result["info_ns"] > 0 and result["launch_ratio"] > 0
