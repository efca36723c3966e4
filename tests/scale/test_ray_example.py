"""examples/ray_actors.py on a local Ray (num_cpus=2): one actor per device, each its own process,
checking the numbers; and what Ray really tells an actor it gave a GPU (ids, CUDA_VISIBLE_DEVICES),
read by offload._ranks. Ray is optional (scripts/test.sh installs it; skipped with the reason when
it is missing); every run is bounded by a hang guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import child_environ, run_bounded

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 300  # a hang guard: a local Ray starts in ~8 s here


def _need_ray() -> None:
    probe = subprocess.run([sys.executable, "-c", "import ray"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        last = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "no reason given"
        print(f"\nRay example skipped: ray cannot be imported ({last})")
        pytest.skip(f"ray cannot be imported ({last}); scripts/test.sh installs it")


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = child_environ(("OFFLOAD_", "RAY_"))
    env.update(OFFLOAD_BACKENDS="host", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", RAY_USAGE_STATS_ENABLED="0")
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


_GPU_IDS = r"""
import json, os, ray
from offload import _ranks
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
