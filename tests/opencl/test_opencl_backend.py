"""What the OpenCL backend adds to the kit, on PoCL's CPU device: the platform's real info, the
kernel parameters read from the kernel's argument info, program images (OpenCL C source, SPIR-V
where the device takes IL), dynamic local memory, and the refusal of devices without SVM. Tests
that build a program take the ``compiler`` fixture (conftest.py): they skip, saying why, where the
PoCL here cannot compile for this CPU."""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload import KernelParam

from helpers import devices

# absent where scripts/test.sh could not install a PoCL that compiles for this CPU (the reason is
# in .venv/opencl-unavailable.txt and printed by test.sh): the whole module skips, saying so
_ABSENT = "offload-opencl or pyopencl is not installed (scripts/test.sh says why, in .venv/opencl-unavailable.txt)"
cl = pytest.importorskip("pyopencl", reason=_ABSENT)
offload_opencl = pytest.importorskip("offload_opencl", reason=_ABSENT)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[ol.DeviceHandle]:
    """The first OpenCL device, in a session of the opencl and host platforms."""
    monkeypatch.setenv("OFFLOAD_BACKENDS", "opencl,host")
    ol.olInit()
    try:
        found = [d for d in devices() if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME) == "opencl"]
        assert found, f"no OpenCL device: {[(s.name, s.note, s.reason) for s in ol.backend_status()]}"
        yield found[0]
    finally:
        ol.olShutDown()


def _program(device: ol.DeviceHandle, source: str) -> Any:
    return ol.olCreateProgram(device, source.encode())


def test_platform_info_is_the_drivers(gpu: ol.DeviceHandle) -> None:
    """One offload platform for every OpenCL platform with an SVM device (the wheel's PoCL, and
    Debian's where both are installed): their vendors and versions, joined in the loader's order."""
    platform = ol.olGetDeviceInfo(gpu, ol.DeviceInfo.PLATFORM)
    svm = cl.device_svm_capabilities.COARSE_GRAIN_BUFFER
    pocls = [p for p in cl.get_platforms() if any(d.svm_capabilities & svm for d in p.get_devices())]
    assert ol.olGetPlatformInfo(platform, ol.PlatformInfo.VENDOR_NAME) == "; ".join(p.vendor.strip() for p in pocls)
    assert ol.olGetPlatformInfo(platform, ol.PlatformInfo.VERSION) == "; ".join(p.version.strip() for p in pocls)
    assert ol.olGetDeviceInfo(gpu, ol.DeviceInfo.NAME) == pocls[0].get_devices()[0].name.strip()
    assert ol.olGetDeviceInfo(gpu, ol.DeviceInfo.TYPE) is ol.DeviceType.CPU


def test_offload_devices_shows_the_pocl_device() -> None:
    env = {**os.environ, "OFFLOAD_BACKENDS": "opencl"}
    out = subprocess.run([sys.executable, "-m", "offload", "devices"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Platform 0: opencl" in out.stdout and cl.get_platforms()[0].vendor.strip() in out.stdout, out.stdout


def test_kernel_params_from_the_argument_info(gpu: ol.DeviceHandle, compiler: None) -> None:
    program = _program(
        gpu,
        "kernel void k(char a, global const float *x, short b, float4 v, float3 w, global int *y, local uint *s, double d) {}",
    )
    try:
        symbol = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
        params = list(symbol.params or ())
    finally:
        ol.olDestroyProgram(program)
    assert params == [
        KernelParam(0, 1, "int", "a"),
        KernelParam(8, 8, "pointer", "x", "float32", True),
        KernelParam(16, 2, "int", "b"),
        KernelParam(32, 16, "bytes", "v"),
        KernelParam(48, 16, "bytes", "w"),  # a vector of 3 is sized and aligned as one of 4
        KernelParam(64, 8, "pointer", "y", "int32", False),
        KernelParam(72, 8, "float", "d"),  # the local pointer is not in the packed struct
    ]


def test_struct_parameters_are_refused_by_name(gpu: ol.DeviceHandle, compiler: None) -> None:
    program = _program(gpu, "typedef struct { int a; float b; } pair; kernel void k(pair p, global int *out) { out[0] = p.a; }")
    try:
        with pytest.raises(ol.OffloadError) as info:
            ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
    finally:
        ol.olDestroyProgram(program)
    assert info.value.code is ol.ErrorCode.UNSUPPORTED and "parameter p" in info.value.details, info.value


def test_dynamic_local_memory_and_mixed_arguments(gpu: ol.DeviceHandle, compiler: None) -> None:
    program = _program(
        gpu,
        """kernel void k(uchar c, global uint *out, ulong n, local uint *s) {
             s[get_local_id(0)] = c + n; barrier(CLK_LOCAL_MEM_FENCE);
             out[get_global_id(0)] = s[get_local_size(0) - 1 - get_local_id(0)] + get_local_id(0); }""",
    )
    out = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 64 * 4)
    try:
        kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
        args = struct.pack("B7xPQ", 7, out, 1000)
        ol.olLaunchKernel(None, gpu, kernel, args, ol.KernelLaunchSizeArgs(1, (2, 1, 1), (32, 1, 1), 32 * 4))
        assert list((ctypes.c_uint32 * 64).from_address(out)) == [1007 + i % 32 for i in range(64)]
    finally:
        ol.olMemFree(out)
        ol.olDestroyProgram(program)


_TOO_MUCH_LOCAL = r"""
import ctypes, json, struct
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
gpu = next(d for d in found if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME) == "opencl")
limit = ol.olGetDeviceInfo(gpu, ol.DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE)
program = ol.olCreateProgram(gpu, b"kernel void k(global uint *out, local uint *s) { s[get_local_id(0)] = 1; "
                                  b"barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = s[0]; }")
kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
out = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 64 * 4)
def launch(dynamic):
    try:
        ol.olLaunchKernel(None, gpu, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1), dynamic))
    except ol.OffloadError as exc:
        return [exc.code.name, exc.details]
    return None
result = {"limit": limit, "over": launch(limit + 4), "huge": launch(1 << 30), "fits": launch(64 * 4)}
result["data"] = list((ctypes.c_uint32 * 64).from_address(out)) == [1] * 64
ol.olMemFree(out)
ol.olDestroyProgram(program)
ol.olShutDown()
print(json.dumps(result))
"""


def test_dynamic_local_memory_beyond_the_device_is_refused(compiler: None) -> None:
    """More dynamic local memory than the device's LOCAL_MEM_SIZE is OUT_OF_RESOURCES, naming the
    sizes (OpenCL's CL_OUT_OF_RESOURCES; PoCL does not check it: Debian's 3.1 aborts, the wheel's
    3.0 runs on), in a child process since a regression aborts it; a launch within it still runs."""
    env = {**os.environ, "OFFLOAD_BACKENDS": "opencl,host"}
    proc = subprocess.run([sys.executable, "-c", _TOO_MUCH_LOCAL], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for case in ("over", "huge"):
        code, details = result[case]
        assert code == "OUT_OF_RESOURCES" and "LOCAL_MEM_SIZE" in details and str(result["limit"]) in details, result
    assert result["fits"] is None and result["data"] is True


def test_a_source_that_does_not_build_names_the_compilers_error(gpu: ol.DeviceHandle, compiler: None) -> None:
    with pytest.raises(ol.OffloadError) as info:
        _program(gpu, "kernel void k(global int *out) { out[0] = undeclared; }")
    assert info.value.code is ol.ErrorCode.INVALID_BINARY and "undeclared" in info.value.details, info.value


def test_spirv_is_taken_only_where_the_device_takes_il(gpu: ol.DeviceHandle) -> None:
    spirv = struct.pack("<5I", 0x07230203, 0x00010000, 0, 1, 0)
    takes_il = "SPIR-V" in (cl.get_platforms()[0].get_devices()[0].il_version or "")
    assert ol.olIsValidBinary(gpu, spirv) is takes_il
    if not takes_il:
        with pytest.raises(ol.OffloadError) as info:
            ol.olCreateProgram(gpu, spirv)
        assert info.value.code is ol.ErrorCode.INVALID_BINARY and "SPIR-V" in info.value.details, info.value


def test_selfcheck_saxpy_is_shipped() -> None:
    source = offload_opencl.test_program("saxpy")
    assert source is not None and b"kernel void saxpy" in source
    assert offload_opencl.test_program("global") is None  # OpenCL gives no global's address


_NO_SVM = r"""
import json
import offload as ol
from offload_opencl import _icd
real = _icd.Loader.device_value
def no_svm(self, device, param, ctype):
    return 0 if param == _icd.DEVICE_SVM_CAPABILITIES else real(self, device, param, ctype)
_icd.Loader.device_value = no_svm
ol.olInit()
status = next(s for s in ol.backend_status() if s.name == "opencl")
print(json.dumps({"loaded": status.loaded, "devices": status.device_count, "note": status.note}))
ol.olShutDown()
"""


def test_devices_without_svm_are_refused_with_a_reason() -> None:
    """A device reporting no SVM (its capabilities hidden by a wrapper of the ICD loader's device
    query, which discovery reads) is left out; ``offload backends`` shows why."""
    env = {**os.environ, "OFFLOAD_BACKENDS": "opencl"}
    proc = subprocess.run([sys.executable, "-c", _NO_SVM], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] and result["devices"] == 0
    assert "no shared virtual memory" in result["note"], result


def test_the_kit_asks_for_aliased_symbol_names(gpu: ol.DeviceHandle, compiler: None) -> None:
    """``Capabilities.symbol_aliases``: the kit's ``kernel(program, "foo")`` asks for the name the
    backend's program exports."""
    from offload.testing import Capabilities, register_capabilities, unregister_capabilities
    from offload_testing.suite._helpers import kernel

    class Renamed(Capabilities):
        symbol_aliases = {"foo": "foo_renamed"}

    register_capabilities("opencl", Renamed)
    program = _program(gpu, "kernel void foo_renamed(global uint *out) { out[get_global_id(0)] = 1; }")
    try:
        symbol = kernel(program, "foo")
        assert ol.olGetSymbolInfo(symbol, ol.SymbolInfo.KIND) is ol.SymbolKind.KERNEL
    finally:
        ol.olDestroyProgram(program)
        unregister_capabilities("opencl")
