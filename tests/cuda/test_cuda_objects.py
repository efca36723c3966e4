"""The object layer (offload.objects) on the CUDA platform, through the simulated driver.

A child pytest runs every test of tests/objects that is parametrised over devices, selecting the
``cuda`` ones, so Buffers, Arrays, DLPack, queues and events run on a CUDA device; then the cuda
example launches the nvcc-built saxpy through the objects (its arguments packed from the
kernel's layout, which cuFuncGetParamInfo reports).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _summary(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)", last)}


def test_object_layer_on_cuda(child_env: Any, kernels: Any, simulator: Any) -> None:
    if simulator is None:
        pytest.skip("runs on the simulated driver (OFFLOAD_CUDA_REAL is set)")
    env = child_env(devices=1, kernels=kernels)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cuda", "tests/objects"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
    )
    counts = _summary(proc.stdout)
    print(f"object layer on cuda: {counts}")
    assert proc.returncode == 0, proc.stdout[-15000:] + proc.stderr[-3000:]
    assert counts.get("passed", 0) >= 40 and not counts.get("failed"), counts


def test_cuda_example_launches_saxpy(child_env: Any, kernels: Any, simulator: Any) -> None:
    env = child_env(devices=1, kernels=kernels)
    image = kernels.image("saxpy", "cubin")
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / "objects_cuda.py"), str(image)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "saxpy ok" in proc.stdout and proc.stdout.splitlines()[-1] == "ok", proc.stdout
    assert "(2, 0)" in proc.stdout  # DLPack: device memory is kDLCUDA
