"""offload-opencl installed without PyOpenCL (``pip install --no-deps``, or PyOpenCL removed later),
which it requires: ``olInit`` skips the platform with a reason that names the missing package and
the remedy, instead of failing at the first allocation with an UNKNOWN ``ModuleNotFoundError``.
The other backends are untouched. Runs in a child that hides PyOpenCL (``sys.modules`` entry None)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import child_environ

pytest.importorskip("offload_opencl", reason="offload-opencl is not installed (scripts/test.sh says why, in .venv/opencl-unavailable.txt)")

_CHILD = r"""
import io, json, sys
sys.modules["pyopencl"] = None  # as if it were not installed
import offload as ol
from offload.cli import main
from offload_opencl import _cl
out = io.StringIO()
real, sys.stdout = sys.stdout, out
status = main(["backends"])
sys.stdout = real
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
platforms = sorted({ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME) for d in found})
host = next(d for d in found if ol.olGetDeviceInfo(d, ol.DeviceInfo.TYPE) == ol.DeviceType.HOST)
ol.olMemFree(ol.olMemAlloc(host, ol.AllocType.HOST, 64))
try:
    _cl.Context  # the first driver object's import, had a device been found
    first_use = None
except ol.OffloadError as error:
    first_use = [error.code.name, error.details]
ol.olShutDown()
print(json.dumps({"status": status, "backends": out.getvalue(), "platforms": platforms, "first_use": first_use}))
"""


def test_opencl_without_pyopencl_is_skipped_with_the_reason() -> None:
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120, env=child_environ())
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    line = next(line for line in out["backends"].splitlines() if line.startswith("opencl:"))
    assert "PyOpenCL is not importable" in line and "pip install 'pyopencl" in line, out["backends"]
    assert "opencl" not in out["platforms"] and "host" in out["platforms"], out
    assert out["first_use"][0] == "BACKEND_FAILURE" and "cannot import PyOpenCL" in out["first_use"][1], out
