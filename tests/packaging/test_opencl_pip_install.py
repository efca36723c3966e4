"""OpenCL as a user installs it: in a fresh venv, ``pip install ./core ./backends/host
./backends/opencl 'pyopencl[pocl]'`` (from the index, as configured here; pip's cache allowed),
then ``offload devices`` lists the wheel's PoCL device without PyOpenCL imported first, and
PyOpenCL, imported afterwards in that process, finds the same platform and copies data through it.

The system's ICD folder is replaced by an empty one (``OCL_ICD_VENDORS``) so that only the wheel's
own PoCL can answer. Skipped, with pip's message, where pyopencl cannot be had from the index.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_UNREACHABLE = re.compile(
    r"No matching distribution|Could not find a version|Failed to establish|NewConnectionError|Network is unreachable|Temporary failure"
)

#: ``offload devices`` in-process, then PyOpenCL in the same process.
_DEVICES_THEN_PYOPENCL = r"""
import contextlib, io, json, sys
from offload.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["devices"])
pyopencl_before = "pyopencl" in sys.modules
from offload_opencl import _icd
ours = _icd.Loader.open().platforms()
import numpy as np, pyopencl as cl
platforms = cl.get_platforms()
ctx = cl.Context(platforms[0].get_devices())
data = np.arange(1024, dtype=np.float32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
back = np.zeros_like(data)
cl.enqueue_copy(cl.CommandQueue(ctx), back, buf).wait()
print(json.dumps({"status": status, "listing": out.getvalue(), "pyopencl_before": pyopencl_before, "ours": ours,
                  "theirs": [p.int_ptr for p in platforms], "vendor": platforms[0].vendor, "copied": bool((back == data).all())}))
"""


def _env(vendors: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PYTHONPATH", "OCL_ICD"))}
    env.update(OCL_ICD_VENDORS=str(vendors), PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_pip_install_pyopencl_pocl_then_offload_devices(tmp_path: pathlib.Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    (tmp_path / "vendors").mkdir()
    env = _env(tmp_path / "vendors")
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
           "./core", "./backends/host", "./backends/opencl", "pyopencl[pocl]"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    if proc.returncode != 0 and _UNREACHABLE.search(proc.stdout + proc.stderr):
        pytest.skip(f"pyopencl[pocl] could not be installed from the index: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr[-5000:]}"

    cli = subprocess.run([str(venv / "bin" / "offload"), "devices"], capture_output=True, text=True, env=env, timeout=300)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert re.search(r"Platform \d+: opencl\n", cli.stdout) and "PoCL" in cli.stdout, cli.stdout
    print(f"\n$ offload devices  # fresh venv, pyopencl[pocl] from the index\n{cli.stdout[:1500]}")

    run = subprocess.run([str(python), "-c", _DEVICES_THEN_PYOPENCL], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-5000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["status"] == 0 and re.search(r"Platform \d+: opencl\n", out["listing"]), out["listing"]
    assert not out["pyopencl_before"], "offload devices imported PyOpenCL"
    assert out["ours"] and out["ours"] == out["theirs"], out
    assert out["copied"] and "pocl" in out["vendor"].lower(), out
