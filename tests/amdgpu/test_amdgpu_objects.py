"""The object layer (offload.objects) on the AMDGPU platform, through the simulated HIP runtime.

A child pytest runs every test of tests/objects that is parametrised over devices, selecting the
``amdgpu`` ones; then the amdgpu example launches the clang-built saxpy through the objects (its
arguments packed from the code object's metadata).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import child_environ, run_pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(hip_build: Any) -> dict[str, str]:
    import os

    base = child_environ(("OFFLOAD_", "GPUSIM_"))
    return {**base, **hip_build.env()}


def test_object_layer_on_amdgpu(hip_build: Any) -> None:
    proc, _, counts = run_pytest(["-k", "amdgpu", "tests/objects"], _env(hip_build), ROOT)
    print(f"object layer on amdgpu: {counts}")
    assert proc.returncode == 0, proc.stdout[-15000:] + proc.stderr[-3000:]
    assert counts.get("passed", 0) >= 40 and not counts.get("failed"), counts


def test_amdgpu_example_launches_saxpy(hip_build: Any) -> None:
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / "objects_amdgpu.py"), str(hip_build.programs / "saxpy.hsaco")],
        capture_output=True, text=True, env=_env(hip_build), timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "saxpy ok" in proc.stdout and proc.stdout.splitlines()[-1] == "ok", proc.stdout
    assert "(10, 0)" in proc.stdout  # DLPack: device memory is kDLROCM
