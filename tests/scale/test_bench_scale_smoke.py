"""benchmarks/bench_scale.py still runs (``--quick``), and its extrapolation is arithmetic on what it measured."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from helpers import child_environ

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scale.py"


def test_quick_json() -> None:
    env = child_environ("OFFLOAD_")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)
    process, trace, merge, extrapolated = results["process"], results["trace"], results["merge"], results["extrapolated"]
    assert process["rss_kib"] > process["peer_rss_kib"] > 0 and process["init_s"] > 0
    assert trace["file_bytes"] > 0 and trace["traced_per_s"] > 0 and trace["events"] > trace["iterations"]
    assert merge["ranks"] == 2 and merge["output_bytes"] > 0
    assert extrapolated["ranks"] == 8000
    assert extrapolated["node_rss_gib"] == process["rss_kib"] * 8 / 2**20
    assert abs(extrapolated["job_trace_gb_per_s_steady"] - trace["bytes_per_iteration"] * 1000 * 8000 / 1e9) < 1e-9
