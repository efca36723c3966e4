"""real_gpu's probes: the machine's own CUDA driver or HIP runtime, read with ctypes (no virtual
environment yet), and whether its version serves the test kernels built here. Without a usable
GPU of that kind (no driver library, no device, or the project's simulator first on the library
path) a probe raises ``Refused``: its one line to print, nothing having run.

Only the standard library: it runs with the system python3 before any install.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REHEARSAL", "Machine", "Refused", "probe_cuda", "probe_hip"]

CUDA_DRIVER_NEEDED = 13000  # nvcc 13.0's cubin (ELF ABI 8) and PTX ISA 9.0 need a 13.0 driver
ROCM_NEEDED = (6, 0)  # clang-19 writes code object v5 by default
#: OFFLOAD_REAL_GPU_REHEARSAL=1 accepts the project's simulator, to check this script on a machine
#: without a GPU; the report's title then says so. Its figures are not a GPU's.
REHEARSAL = os.environ.get("OFFLOAD_REAL_GPU_REHEARSAL") == "1"


class Refused(Exception):
    """No usable GPU of the kind asked: the one line to print."""


@dataclass
class Machine:
    kind: str
    driver: str  # human-readable version
    version_ok: bool
    verdict: str  # the sentence about the driver version
    devices: list[dict[str, str]]
    arch: str  # what the kernels are built for: "90" (CUDA SM) or "gfx90a"


def probe_cuda() -> Machine:
    """The CUDA driver of this machine (libcuda.so.1 through the dynamic loader)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise Refused(f"no CUDA driver on this machine ({exc}); nothing was run") from None
    rc = lib.cuInit(0)
    if rc != 0:
        raise Refused(f"the CUDA driver has no usable device (cuInit returned {rc}); nothing was run")
    version, count = ctypes.c_int(), ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(version))
    lib.cuDeviceGetCount(ctypes.byref(count))
    devices = []
    for ordinal in range(count.value):
        handle, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGet(ctypes.byref(handle), ordinal)
        lib.cuDeviceGetName(name, 256, handle)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, handle)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, handle)
        devices.append({"name": name.value.decode(errors="replace"), "arch": f"sm_{major.value}{minor.value}"})
    if not devices:
        raise Refused("the CUDA driver reports no device; nothing was run")
    if any("simulated" in d["name"] for d in devices) and not REHEARSAL:
        raise Refused("the CUDA driver found is the project's simulator (tests/simulators), not a GPU; nothing was run")
    v = version.value
    ok = v >= CUDA_DRIVER_NEEDED
    verdict = (
        f"driver CUDA {v // 1000}.{v % 1000 // 10} ({v}): "
        + ("meets" if ok else "is older than")
        + " the 13.0 the test kernels need (nvcc 13.0: cubin ELF ABI 8, PTX ISA 9.0)"
    )
    return Machine("cuda", f"{v // 1000}.{v % 1000 // 10}", ok, verdict, devices, devices[0]["arch"][3:])


def _load_hip() -> ctypes.CDLL:
    candidates = [Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "lib" / "libamdhip64.so", Path("libamdhip64.so")]
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(str(path))
        except OSError as exc:
            errors.append(str(exc))
    raise Refused(f"no HIP runtime on this machine ({'; '.join(errors)}); nothing was run")


def probe_hip() -> Machine:
    """The HIP runtime of this machine ($ROCM_PATH/lib, /opt/rocm/lib, then the loader's path)."""
    lib = _load_hip()
    count = ctypes.c_int()
    rc = lib.hipGetDeviceCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        raise Refused(f"the HIP runtime has no usable device (hipGetDeviceCount returned {rc}); nothing was run")
    version = ctypes.c_int()
    lib.hipDriverGetVersion(ctypes.byref(version))
    getter = getattr(lib, "hipGetDevicePropertiesR0600", None) or lib.hipGetDeviceProperties
    devices = []
    for ordinal in range(count.value):
        props = ctypes.create_string_buffer(4096)  # hipDeviceProp_tR0600 is 1472 bytes
        getter(props, ordinal)
        name = props.raw[:256].split(b"\0", 1)[0].decode(errors="replace")
        gcn = props.raw[1160:1416].split(b"\0", 1)[0].decode(errors="replace")
        devices.append({"name": name, "arch": gcn})
    if any("gpusim" in d["name"] for d in devices) and not REHEARSAL:
        raise Refused("the HIP runtime found is the project's simulator (tests/simulators), not a GPU; nothing was run")
    v = version.value
    major, minor = v // 10_000_000, v // 100_000 % 100
    ok = (major, minor) >= ROCM_NEEDED
    verdict = (
        f"HIP driver {major}.{minor} ({v}): "
        + ("meets" if ok else "is older than")
        + " the ROCm 6.0 the test kernels need (clang-19 code objects v5)"
    )
    target = devices[0]["arch"].split(":", 1)[0]
    return Machine("amdgpu", f"{major}.{minor}", ok, verdict, devices, target)
