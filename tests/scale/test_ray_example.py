"""examples/ray_actors.py on a local Ray (num_cpus=2): one actor per device, each its own process,
checking the numbers, and traced: one timeline file per actor (Ray ends its workers without exit
handlers; each actor flushes its own) that ``offload trace merge`` joins with the driver's; and what Ray really tells an actor it gave a GPU (ids, CUDA_VISIBLE_DEVICES),
read by offload._core.ranks. Ray is optional (scripts/test.sh installs it; skipped with the reason when
it is missing); every run is bounded by a hang guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import child_environ, run_bounded

from offload.cli import main

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 300  # a hang guard: a local Ray starts in ~8 s here


def _need_ray() -> None:
    probe = subprocess.run([sys.executable, "-c", "import ray"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        last = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "no reason given"
        print(f"\nRay example skipped: ray cannot be imported ({last})")
        pytest.skip(f"ray cannot be imported ({last}); scripts/test.sh installs it")


def _run(argv: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = child_environ(("OFFLOAD_", "RAY_"))
    env.update(OFFLOAD_BACKENDS="host", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", RAY_USAGE_STATS_ENABLED="0", **extra)
    return run_bounded(argv, env, cwd, RUN_TIMEOUT)


def test_ray_actors_example(tmp_path: Path) -> None:
    _need_ray()
    proc = _run([sys.executable, str(ROOT / "examples" / "ray_actors.py"), "--n", str(1 << 14)], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    total = 2 * (1 << 14)
    assert result["actors"] == 2 and result["devices"] == ["host:0", "host:0"]
    assert len(set(result["pids"])) == 2 and result["driver_pid"] not in result["pids"]  # each actor its own process
    assert result["sum"] == 2.5 * total * (total - 1) / 2 + total


def test_ray_actors_leave_one_timeline_each_that_merge_joins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _need_ray()
    argv = [sys.executable, str(ROOT / "examples" / "ray_actors.py"), "--n", str(1 << 12)]
    proc = _run(argv, tmp_path, OFFLOAD_TRACE="perfetto:t-{pid}.json")  # relative: the actors share the driver's folder
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    files = sorted(tmp_path.glob("t-*.json"))
    pids = [result["driver_pid"], *result["pids"]]
    assert sorted(p.name for p in files) == sorted(f"t-{pid}.json" for pid in pids), proc.stderr[-5000:]
    for pid in result["pids"]:  # each actor's own file holds its saxpy and the copies around it
        events = json.loads((tmp_path / f"t-{pid}.json").read_text())["traceEvents"]
        assert [e["name"] for e in events if e.get("cat") == "kernel"] == ["saxpy"]
        assert {"olLaunchKernel", "olMemcpy"} <= {e["name"] for e in events if e.get("cat") == "api"}
    job = tmp_path / "job.json"
    assert main(["trace", "merge", *map(str, files), "-o", str(job)]) == 0
    assert "3 rank(s)" in capsys.readouterr().out
    assert main(["trace", "--json", str(job)]) == 0
    ranks = json.loads(capsys.readouterr().out)["ranks"]
    assert len(ranks) == 3 and sorted(r["kernels"] for r in ranks.values()) == [0, 1, 1], ranks
    assert sum(r["bytes"] for r in ranks.values()) == 2 * 3 * 4 * (1 << 12)  # x and y in, y out, per actor


_GPU_IDS = r"""
import json, os, ray
from offload._core import ranks as _ranks
ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, configure_logging=False)

@ray.remote(num_gpus=1, num_cpus=0)
class Probe:
    def ask(self):
        return {"ids": _ranks.ray_accelerator_ids(), "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "spread": _ranks.spread(2, "cuda"), "host": _ranks.spread(1, "host")}

probes = [Probe.remote() for _ in range(2)]
print(json.dumps(ray.get([p.ask.remote() for p in probes], timeout=240)))
ray.shutdown()
"""


def test_what_ray_tells_an_actor_with_a_gpu(tmp_path: Path) -> None:
    """Ray (told the node has 2 GPUs) gives each actor one id and restricts CUDA_VISIBLE_DEVICES to
    it: the driver then numbers that GPU 0, which is what offload picks."""
    _need_ray()
    proc = _run([sys.executable, "-c", _GPU_IDS], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(a["ids"][0] for a in answers) == ["0", "1"] and all(len(a["ids"]) == 1 for a in answers)
    for answer in answers:
        assert answer["visible"] == answer["ids"][0]
        assert answer["spread"] == [0, "Ray's assigned accelerator id"]
        assert answer["host"] is None  # Ray's GPU ids say nothing about the host platform, and no launcher rank is set
