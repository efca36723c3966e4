"""scripts/cuda-real.sh and scripts/amdgpu-real.sh refuse in one line where there is no GPU of their
kind: no driver library, or the project's simulator first on the library path (issue 15, part D).
Each runs in a child process with a bounded time: a refusal runs nothing (no install, no build)."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_environ

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


def _module(name: str, path: Path) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _loadable(library: str) -> bool:
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = child_environ(("OFFLOAD_", "GPUSIM_", "LD_LIBRARY_PATH", "ROCM"))
    return subprocess.run(
        [str(SCRIPTS / script)], capture_output=True, text=True, env={**base, **env}, cwd=ROOT, timeout=60
    )


def _one_line_refusal(proc: subprocess.CompletedProcess[str], prefix: str, reason: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(prefix) and reason in lines[0] and lines[0].endswith("nothing was run"), lines[0]


def test_cuda_real_refuses_without_a_driver() -> None:
    if _loadable("libcuda.so.1"):
        pytest.skip("this machine has a CUDA driver: cuda-real.sh would run")
    _one_line_refusal(_run("cuda-real.sh", LD_LIBRARY_PATH=""), "cuda-real: ", "no CUDA driver on this machine")


def test_cuda_real_refuses_the_simulator() -> None:
    build = _module("gpusim_build", ROOT / "tests" / "simulators" / "build.py")
    driver = build.cuda_driver()  # type: ignore[attr-defined]
    proc = _run("cuda-real.sh", LD_LIBRARY_PATH=str(driver))
    _one_line_refusal(proc, "cuda-real: ", "the project's simulator")


def test_amdgpu_real_refuses_without_a_runtime(tmp_path: Path) -> None:
    if _loadable("libamdhip64.so") or (Path("/opt/rocm") / "lib" / "libamdhip64.so").exists():
        pytest.skip("this machine has a HIP runtime: amdgpu-real.sh would run")
    proc = _run("amdgpu-real.sh", LD_LIBRARY_PATH="", ROCM_PATH=str(tmp_path / "no-rocm"))
    _one_line_refusal(proc, "amdgpu-real: ", "no HIP runtime on this machine")


def test_amdgpu_real_refuses_the_simulator(tmp_path: Path) -> None:
    hipsim = _module("hipsim", ROOT / "tests" / "simulators" / "hip" / "hipsim.py")
    runtime = hipsim.build_runtime(tmp_path / "hipsim")  # type: ignore[attr-defined]
    proc = _run("amdgpu-real.sh", LD_LIBRARY_PATH=str(runtime.parent), ROCM_PATH=str(runtime.parent))
    _one_line_refusal(proc, "amdgpu-real: ", "the project's simulator")
