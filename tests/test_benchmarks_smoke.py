"""The benchmark scripts still run: ``benchmarks/bench_host.py --quick``, ``bench_tracing.py --quick`` and
``benchmarks/bench_peer_pocl.py --quick`` (skipped without PyOpenCL) and ``bench_startup.py --quick``
in a subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest
from helpers import child_environ

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_host.py"
PEER = SCRIPT.with_name("bench_peer_pocl.py")
OPENCL = SCRIPT.with_name("bench_opencl.py")


def _run(*args: str, script: pathlib.Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    env = child_environ("OFFLOAD_")
    return subprocess.run(
        [sys.executable, str(script), "--quick", *args], capture_output=True, text=True, env=env, timeout=120
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
        "olLaunchKernel enqueued / bare ctypes",
        "/ memmove throughput",
        "tracing off vs compiled out",
    ):
        assert text in out, f"{text!r} missing from:\n{out}"
    if "saxpy vs the C OpenMP loop: skipped" not in out:  # a compiler without OpenMP skips it
        for text in ("offload saxpy + sync", "C OpenMP loop", "saxpy / C OpenMP loop"):
            assert text in out, f"{text!r} missing from:\n{out}"
    summary = out[out.index("summary") :]
    assert summary.count("PASS") + summary.count("FAIL") == 4 + ("saxpy / C OpenMP loop" in summary)


def test_quick_json() -> None:
    proc = _run("--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert results["launch"]["sync_ns"] > 0 and results["launch"]["bare_ctypes_ns"] > 0
    assert results["launch"]["enqueued_ns"] > 0
    assert results["memcpy"]["large_throughput_ratio"] > 0
    assert results["churn"]["queues_per_s"] > 0 and results["churn"]["rss_after_kib"] >= 0
    saxpy = results["saxpy"]
    assert "skipped" in saxpy or (saxpy["offload_ns"] > 0 and saxpy["openmp_ns"] > 0 and saxpy["ratio"] > 0)
    assert "query_overhead_pct" in results["tracing"]
    assert [c["passed"] in (True, False) for c in results["checks"]] == [True] * (4 + ("skipped" not in saxpy))


def test_peer_benchmark_without_pyopencl_says_how_to_install_it(tmp_path: pathlib.Path) -> None:
    blocker = tmp_path / "pyopencl.py"  # shadows an installed PyOpenCL
    blocker.write_text("raise ImportError('hidden by the test')\n")
    env = child_environ("OFFLOAD_")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(PEER), "--quick"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and 'pip install "pyopencl[pocl]"' in proc.stderr, proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None, reason='PyOpenCL is not installed (pip install "pyopencl[pocl]")')
def test_peer_benchmark_quick_json() -> None:
    proc = _run("--json", script=PEER)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert set(results["ratios"]) == {"roundtrip", "batch", "saxpy", "copy"}
    assert all(ratio > 0 for ratio in results["ratios"].values())
    assert results["saxpy_scaling"] > 0 and results["pocl_device"]
    assert set(results["checks"]) == {"roundtrip", "batch", "saxpy", "copy", "saxpy_scaling"}


@pytest.mark.skipif(importlib.util.find_spec("offload_opencl") is None, reason="offload-opencl is not installed (scripts/test.sh installs it with PoCL)")
def test_opencl_benchmark_quick_json() -> None:
    proc = _run("--json", script=OPENCL)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    for case in ("launch", "launch_set", "roundtrip", "copy", "event"):
        assert results[case]["offload_us"] > 0 and results[case]["pyopencl_us"] > 0 and results[case]["ratio"] > 0
    assert results["device"]


BROKEN = r"""
import runpy, sys
import offload as ol

def refuse(*args, **kwargs):
    raise ol.OffloadError(ol.ErrorCode.BACKEND_FAILURE, "the device fell over")

ol.olCreateProgram = refuse
sys.argv = [{script!r}, "--quick"]
runpy.run_path({script!r}, run_name="__main__")
"""


@pytest.mark.parametrize("name", ["bench_host.py"])
def test_a_benchmark_exits_with_a_message_on_an_error(name: str) -> None:
    script = SCRIPT.with_name(name)
    env = child_environ("OFFLOAD_")
    env["PYTHONPATH"] = str(script.parent)
    proc = subprocess.run(
        [sys.executable, "-c", BROKEN.format(script=str(script))], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{name[:-3]}: error: OffloadError" in proc.stderr and "the device fell over" in proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_startup_quick_json() -> None:
    """benchmarks/bench_startup.py --quick: fresh processes time import + olInit, every backend
    and the host alone, and say which GPU bindings were imported."""
    proc = _run("--json", script=SCRIPT.with_name("bench_startup.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)
    for variant in ("all backends", "host only"):
        figures = results[variant]
        assert 0 < figures["import_s"] < figures["total_s"] and figures["init_s"] > 0
        assert figures["backends"]["host"][0] == 1
    assert results["host only"]["heavy_modules"] == []
    assert results["passed"] == (results["all backends"]["total_s"] <= results["target_s"])


def test_tracing_quick_json() -> None:
    """benchmarks/bench_tracing.py --quick: every mode's per-call costs, the timeline's bytes per
    call, memory growth and merge throughput, and the liboffload 22 peer (or why it was skipped)."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT.with_name("bench_tracing.py")), "--quick", "--json"],
        capture_output=True, text=True, env=child_environ("OFFLOAD_"), timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)
    assert set(results["modes"]) >= {"off", "text", "json", "timeline", "timeline-json"}
    for mode, entry in results["modes"].items():
        assert entry["launch_ns"] > 0 and entry["info_ns"] > 0, mode
    assert 0 < results["modes"]["timeline"]["bytes_per_call"] < results["modes"]["timeline-json"]["bytes_per_call"]
    assert results["growth"]["calls"] > 0 and results["growth"]["rss_after_kib"] > 0
    assert results["merge"]["mb_per_s"] > 0
    peer = results["peer"]
    assert "skipped" in peer or (peer["off_ns"] > 0 and peer["traced_ns"] > peer["off_ns"])
    assert len(results["checks"]) == 4 + ("skipped" not in peer)
