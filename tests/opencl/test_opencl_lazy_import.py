"""``olInit`` finds the OpenCL devices through the ICD loader without importing PyOpenCL (nor
numpy); PyOpenCL arrives with the first driver object. What can crash (a process's first load of
the loader, a loader without drivers) runs in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from helpers import child_environ, run_in_threads
from pocl_compiler import cannot_compile

_ABSENT = "offload-opencl or pyopencl is not installed (scripts/test.sh says why, in .venv/opencl-unavailable.txt)"
cl = pytest.importorskip("pyopencl", reason=_ABSENT)
offload_opencl = pytest.importorskip("offload_opencl", reason=_ABSENT)

from offload_opencl import _device, _icd, _info, _memory, _program, _queue  # noqa: E402

import offload as ol  # noqa: E402

_INIT_THEN_USE = r"""
import ctypes, json, os, struct, sys
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
out = {
    "names": [ol.olGetDeviceInfo(d, ol.DeviceInfo.NAME) for d in found],
    "info": [{p.name: repr(ol.olGetDeviceInfo(d, p)) for p in ol.DeviceInfo if p not in (ol.DeviceInfo.PLATFORM,)} for d in found],
    "imported_at_init": sorted(m for m in ("pyopencl", "numpy") if m in sys.modules),
}
# the first driver object: memory allocated and filled, copied to host-readable memory
gpu = found[0]
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64 * 4)
ol.olMemFill(None, mem, struct.pack("I", 7), 64 * 4)
shared = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 64 * 4)
ol.olMemcpy(None, shared, gpu, mem, gpu, 64 * 4)
out["copied"] = list((ctypes.c_uint32 * 64).from_address(shared))
out["imported_after_use"] = sorted(m for m in ("pyopencl",) if m in sys.modules)
if os.environ.get("LAUNCH") == "1":  # where PoCL compiles for this CPU: a kernel built and launched
    program = ol.olCreateProgram(gpu, b"kernel void k(global uint *out, uint add) { out[get_global_id(0)] = get_global_id(0) + add; }")
    kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
    ol.olLaunchKernel(None, gpu, kernel, struct.pack("PI4x", mem, 5), ol.KernelLaunchSizeArgs(1, (4, 1, 1), (16, 1, 1), 0))
    ol.olMemcpy(None, shared, gpu, mem, gpu, 64 * 4)
    out["launched"] = list((ctypes.c_uint32 * 64).from_address(shared))
    ol.olDestroyProgram(program)
ol.olMemFree(shared)
ol.olMemFree(mem)
ol.olShutDown()
print(json.dumps(out))
"""


def _child(code: str, **env: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**child_environ(), **env}
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _pyopencl_svm_devices() -> list[Any]:
    coarse = cl.device_svm_capabilities.COARSE_GRAIN_BUFFER
    return [d for p in cl.get_platforms() for d in p.get_devices() if d.svm_capabilities & coarse]


@pytest.fixture(scope="module")
def first_use() -> Any:
    """What a child saw at ``olInit`` (OpenCL only), at its first allocation and copy, and (where
    PoCL compiles here) at its first launch."""
    return _child(_INIT_THEN_USE, OFFLOAD_BACKENDS="opencl", LAUNCH="0" if cannot_compile() else "1")


def test_init_imports_neither_pyopencl_nor_numpy_and_finds_pyopencls_devices(first_use: Any) -> None:
    out = first_use
    assert out["imported_at_init"] == [], out["imported_at_init"]
    assert out["names"] == [d.name.strip() for d in _pyopencl_svm_devices()]
    assert out["copied"] == [7] * 64
    assert out["imported_after_use"] == ["pyopencl"]


def test_the_first_launch_after_a_lazy_init(first_use: Any, compiler: None) -> None:
    assert first_use["launched"] == [i + 5 for i in range(64)]


def test_device_info_read_through_the_loader_is_pyopencls(first_use: Any) -> None:
    """Each property read with ctypes at init equals what PyOpenCL's ``Device`` attributes give."""
    (info,) = first_use["info"][:1]
    d = _pyopencl_svm_devices()[0]
    group = min(int(d.max_work_group_size), 0xFFFFFFFF)
    expected: dict[str, Any] = {
        "TYPE": ol.DeviceType.CPU if d.type & cl.device_type.CPU else ol.DeviceType.GPU,
        "NAME": d.name.strip(), "VENDOR": d.vendor.strip(), "DRIVER_VERSION": d.driver_version.strip(),
        "MAX_WORK_GROUP_SIZE": group,
        "MAX_WORK_GROUP_SIZE_PER_DIMENSION": ol.Dimensions(*(min(int(v), group) for v in (list(d.max_work_item_sizes) + [1, 1])[:3])),
        "VENDOR_ID": d.vendor_id, "NUM_COMPUTE_UNITS": d.max_compute_units, "MAX_CLOCK_FREQUENCY": d.max_clock_frequency,
        "ADDRESS_BITS": d.address_bits, "MAX_MEM_ALLOC_SIZE": d.max_mem_alloc_size, "GLOBAL_MEM_SIZE": d.global_mem_size,
        "WORK_GROUP_LOCAL_MEM_SIZE": d.local_mem_size, "NUM_LANES": d.native_vector_width_int,
    }  # fmt: skip
    for kind in ("SINGLE", "DOUBLE", "HALF"):
        try:
            bits = int(getattr(d, f"{kind.lower()}_fp_config"))
        except cl.Error:
            bits = 0
        flags = [f for f in ol.DeviceFpCapabilityFlag if bits & getattr(cl.device_fp_config, str(f.name))]
        expected[f"{kind}_FP_CONFIG"] = ol.DeviceFpCapabilityFlag(sum(flags))
    for p in ol.DeviceInfo:
        if p.name.startswith("NATIVE_VECTOR_WIDTH_"):
            expected[p.name] = int(getattr(d, p.name.lower()))
    for name, value in expected.items():
        assert info[name] == repr(value), (name, info[name], value)


def test_a_missing_loader_library_is_named() -> None:
    with pytest.raises(_icd.LoaderUnavailable, match=r"no OpenCL ICD loader: /nonexistent/libOpenCL\.so\.1 cannot be loaded"):
        _icd.Loader("/nonexistent/libOpenCL.so.1")


def test_the_loader_is_the_one_pyopencl_links_to() -> None:
    """The ids discovery reads are PyOpenCL's (one loader in the process, one set of handles)."""
    loader = _icd.Loader.open()
    assert loader.platforms() == [p.int_ptr for p in cl.get_platforms()]
    assert os.environ["PYOPENCL_HOME"] == os.path.dirname(cl.__file__)


def test_first_use_from_many_threads_makes_one_context_and_queue() -> None:
    devices, _ = _device.discover()
    assert devices, "no OpenCL device"
    device = devices[0]
    seen: list[tuple[int, int, int]] = []
    run_in_threads(lambda: seen.append((id(device.context), id(device.sync_queue), id(device.device))), 8)
    assert len(set(seen)) == 1, seen
    assert device.context is device.platform.context()[0]
    assert device.device.int_ptr == device.handle
    device.finish()


def test_the_header_constants_are_pyopencls() -> None:
    """The plain integers used instead of PyOpenCL's enums (so no module imports it) are its values."""
    pairs = [
        (_memory._RW, cl.svm_mem_flags.READ_WRITE), (_memory._FINE, cl.svm_mem_flags.SVM_FINE_GRAIN_BUFFER),
        (_queue._COMPLETE, cl.command_execution_status.COMPLETE),
        (_program._ARG_ADDRESS_QUALIFIER, cl.kernel_arg_info.ADDRESS_QUALIFIER), (_program._ARG_TYPE_NAME, cl.kernel_arg_info.TYPE_NAME),
        (_program._ARG_TYPE_QUALIFIER, cl.kernel_arg_info.TYPE_QUALIFIER), (_program._ARG_NAME, cl.kernel_arg_info.NAME),
        (_program._LOCAL, cl.kernel_arg_address_qualifier.LOCAL), (_program._ARG_TYPE_CONST, cl.kernel_arg_type_qualifier.CONST),
        (_device.SVM_COARSE_GRAIN_BUFFER, cl.device_svm_capabilities.COARSE_GRAIN_BUFFER),
        (_device.SVM_FINE_GRAIN_BUFFER, cl.device_svm_capabilities.FINE_GRAIN_BUFFER),
        (_icd.PLATFORM_NAME, cl.platform_info.NAME), (_icd.PLATFORM_VENDOR, cl.platform_info.VENDOR),
        (_icd.PLATFORM_VERSION, cl.platform_info.VERSION), (_icd.DEVICE_NAME, cl.device_info.NAME),
        (_icd.DEVICE_SVM_CAPABILITIES, cl.device_info.SVM_CAPABILITIES), (_icd.DEVICE_IL_VERSION, cl.device_info.IL_VERSION),
        (_info._DEVICE_TYPE_CPU, cl.device_type.CPU),
    ]  # fmt: skip
    assert _program._GLOBAL == {cl.kernel_arg_address_qualifier.GLOBAL, cl.kernel_arg_address_qualifier.CONSTANT}
    for bit, flag in _info.FP_FLAGS.items():
        pairs.append((bit, getattr(cl.device_fp_config, str(flag.name))))
    for name in ("TYPE", "VENDOR_ID", "MAX_COMPUTE_UNITS", "MAX_WORK_GROUP_SIZE", "MAX_WORK_ITEM_SIZES", "MAX_CLOCK_FREQUENCY",
                 "ADDRESS_BITS", "MAX_MEM_ALLOC_SIZE", "SINGLE_FP_CONFIG", "GLOBAL_MEM_SIZE", "LOCAL_MEM_SIZE", "VENDOR",
                 "DOUBLE_FP_CONFIG", "HALF_FP_CONFIG"):  # fmt: skip
        pairs.append((getattr(_info, f"_{name}"), getattr(cl.device_info, name)))
    pairs.append((_info._DRIVER_VERSION, cl.device_info.DRIVER_VERSION))
    for p, param in _info._NATIVE_VECTOR_WIDTHS.items():
        pairs.append((param, getattr(cl.device_info, p.name)))
    assert [int(a) for a, _ in pairs] == [int(b) for _, b in pairs]
