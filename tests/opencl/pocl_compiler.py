"""Whether the OpenCL devices of this environment compile OpenCL C: the PoCL 3.0 (LLVM 14) of
pyopencl's wheel cannot on CPUs its LLVM does not know (AMD family 26: "unknown target CPU
'generic'"), while discovery, device info and copies need no compiler. ``cannot_compile()`` is
None where every device compiles, else the reason the compiling tests skip with, naming the CPU,
the PoCL and the compiler's error (probed once per process, in a child)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys

from helpers import child_environ

__all__ = ["NO_COMPILER_ENV", "cannot_compile", "cpu"]

#: Set for the kit's child run: the reason its program cases skip with (kit/kit_opencl.py).
NO_COMPILER_ENV = "OFFLOAD_TEST_OPENCL_CANNOT_COMPILE"

_PROBE = r"""
import json
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
out = []
for d in found:
    platform = ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM)
    if ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME) != "opencl":
        continue
    try:
        ol.olDestroyProgram(ol.olCreateProgram(d, b"kernel void k(global int *a) { a[0] = 1; }"))
        error = None
    except ol.OffloadError as exc:
        error = exc.details
    out.append({"device": ol.olGetDeviceInfo(d, ol.DeviceInfo.NAME), "driver": ol.olGetDeviceInfo(d, ol.DeviceInfo.DRIVER_VERSION),
                "version": ol.olGetPlatformInfo(platform, ol.PlatformInfo.VERSION), "error": error})
ol.olShutDown()
print(json.dumps(out))
"""


def cpu() -> str:
    """This CPU as /proc/cpuinfo names it: model name, family and model."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown CPU"
    fields = {k: v for k, v in re.findall(r"^(model name|cpu family|model)\s*:\s*(.*)$", text, re.M)[:3][::-1]}
    return f"{fields.get('model name', '?').strip()}, family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}"


def _first_error(details: str) -> str:
    lines = [line.strip() for line in details.splitlines() if line.strip()]
    errors = [line for line in lines[1:] if "error" in line.lower()]
    return (errors or lines or ["no message"])[0][:240]


def _platform(versions: str, driver: str) -> str:
    """The device's own platform's version among the ``; ``-joined versions of every OpenCL platform."""
    return next((v.strip() for v in versions.split(";") if driver in v), f"driver {driver}")


def cannot_compile(**extra_env: str) -> str | None:
    """None where every OpenCL device compiles a trivial kernel, else why not (one sentence);
    ``extra_env``: variables for the probing child (e.g. PoCL's), besides this process's."""
    return _probe(tuple(sorted(extra_env.items())))


@functools.cache
def _probe(extra_env: tuple[tuple[str, str], ...]) -> str | None:
    env = {**child_environ(), "OFFLOAD_BACKENDS": "opencl", **dict(extra_env)}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"the OpenCL compiler probe crashed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    if not found:
        raise RuntimeError("the OpenCL compiler probe found no OpenCL device")
    failed = [d for d in found if d["error"] is not None]
    if not failed:
        return None
    named = "; ".join(f"{d['device']} ({_platform(d['version'], d['driver'])}): {_first_error(d['error'])}" for d in failed)
    return f"the OpenCL C compiler does not work on this CPU ({cpu()}): {named}"
