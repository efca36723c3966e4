"""With no GPU driver, `import offload; olInit()` imports neither cuda.bindings nor hip-python:
each GPU backend looks for its driver library first, and `offload backends` still says why it
has no device. Each case runs in a child process (the driver is chosen when first loaded)."""

from __future__ import annotations

import ctypes.util
import importlib.util
import json
import os
import subprocess
import sys

import pytest

CHILD = r"""
import json, sys
import offload
offload.olInit()
status = {s.name: [s.loaded, s.device_count, s.note] for s in offload.backend_status()}
offload.olShutDown()
heavy = sorted(m for m in sys.modules if m.startswith(("cuda.bindings", "hip", "rocm.bindings.hip", "rocm.bindings.cyhip")))
print(json.dumps({"heavy": heavy, "status": status}))
"""


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _run(code: str, tmp_path: os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OFFLOAD_BACKENDS", "OFFLOAD_TRACE")}
    env["LD_LIBRARY_PATH"] = str(tmp_path)  # an empty folder: no simulated driver on the path
    env["ROCM_PATH"] = str(tmp_path)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def no_gpu_driver() -> None:
    if not (_installed("offload_cuda") or _installed("offload_amdgpu")):
        pytest.skip("no GPU backend installed")
    if ctypes.util.find_library("cuda") or ctypes.util.find_library("amdhip64"):
        pytest.skip("this machine has a GPU driver library: the no-driver path cannot be shown here")


def test_init_without_driver_imports_no_gpu_bindings(no_gpu_driver: None, tmp_path: os.PathLike[str]) -> None:
    proc = _run(CHILD, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["heavy"] == [], out["heavy"]
    if _installed("offload_cuda"):
        loaded, count, note = out["status"]["cuda"]
        assert loaded and count == 0
        assert note.startswith("no CUDA driver: libcuda.so.1 cannot be loaded"), note
    if _installed("offload_amdgpu"):
        loaded, count, note = out["status"]["amdgpu"]
        assert loaded and count == 0
        assert note.startswith("no HIP runtime: failed to dlopen") and "libamdhip64.so" in note, note
    assert out["status"]["host"][:2] == [True, 1]


def test_offload_backends_explains_without_importing_bindings(no_gpu_driver: None, tmp_path: os.PathLike[str]) -> None:
    code = (
        "import runpy, sys, json\n"
        "sys.argv = ['offload', 'backends']\n"
        "try:\n    runpy.run_module('offload', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('cuda.bindings', 'hip', 'rocm.bindings.hip')))))\n"
    )
    proc = _run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == []
    if _installed("offload_cuda"):
        assert any(l.startswith("cuda: no devices: no CUDA driver: libcuda.so.1") for l in lines), lines
    if _installed("offload_amdgpu"):
        assert any(l.startswith("amdgpu: no devices: no HIP runtime: failed to dlopen") for l in lines), lines
