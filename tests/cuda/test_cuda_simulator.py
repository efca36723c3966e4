"""The simulated CUDA driver itself, through the real cuda.bindings (and ctypes for the entry
point table): it models the driver's documented strictness, not our backend's expectations."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import LOCATIONS, PROC_LOOKUP, driver_child

pytestmark = pytest.mark.usefixtures("simulated")

_STRICT = driver_child(
    r"""
out = {}
out["before_init"] = name(d.cuDeviceGetCount())
out["init_flags"] = name(d.cuInit(1))
ck(d.cuInit(0))
out["bad_ordinal"] = name(d.cuDeviceGet(5))
out["no_context"] = name(d.cuMemAlloc(64))
dev, ctx = setup()
mem = ck(d.cuMemAlloc(64))
host = ctypes.create_string_buffer(128)
out["copy_in_bounds"] = name(d.cuMemcpyHtoD(mem, ctypes.addressof(host), 64))
out["copy_past_end"] = name(d.cuMemcpyHtoD(mem, ctypes.addressof(host), 65))
out["copy_from_interior_past_end"] = name(d.cuMemcpyDtoH(ctypes.addressof(host), int(mem) + 32, 33))
out["copy_untracked_device_pointer"] = name(d.cuMemcpyHtoD(ctypes.addressof(host), ctypes.addressof(host), 8))
out["memset_past_end"] = name(d.cuMemsetD32(mem, 7, 17))
out["memset_misaligned"] = name(d.cuMemsetD32(int(mem) + 2, 7, 1))
out["free_interior"] = name(d.cuMemFree(int(mem) + 8))
out["free"] = name(d.cuMemFree(mem))
out["double_free"] = name(d.cuMemFree(mem))
out["free_host_with_cuMemFree"] = name(d.cuMemFree(int(ck(d.cuMemAllocHost(64)))))
out["too_much"] = name(d.cuMemAlloc(1 << 40))
reg = ctypes.create_string_buffer(8192)
out["register"] = name(d.cuMemHostRegister(ctypes.addressof(reg), 4096, 0))
out["register_overlap"] = name(d.cuMemHostRegister(ctypes.addressof(reg) + 1024, 4096, 0))
out["unregister_interior"] = name(d.cuMemHostUnregister(ctypes.addressof(reg) + 8))
out["unregister"] = name(d.cuMemHostUnregister(ctypes.addressof(reg)))
# streams and events
s = ck(d.cuStreamCreate(1))
out["stream_bad_flags"] = name(d.cuStreamCreate(8))
e0, e1 = ck(d.cuEventCreate(0)), ck(d.cuEventCreate(0))
quiet = ck(d.cuEventCreate(2))  # CU_EVENT_DISABLE_TIMING
ck(d.cuEventRecord(e0, s)); ck(d.cuEventRecord(quiet, s))
calls = []
HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def inside(_):
    calls.append(name(d.cuCtxGetCurrent()))  # the driver forbids API calls in host functions
cb = HOSTFN(inside)
ck(d.cuLaunchHostFunc(s, d.CUhostFn(ctypes.cast(cb, ctypes.c_void_p).value), 0))
ck(d.cuEventRecord(e1, s))
out["query_busy"] = name(d.cuStreamQuery(s))
out["elapsed_pending"] = name(d.cuEventElapsedTime(e0, e1))
ck(d.cuStreamSynchronize(s))
out["query_idle"] = name(d.cuStreamQuery(s))
out["elapsed"] = ck(d.cuEventElapsedTime(e0, e1)) >= 0
out["elapsed_without_timing"] = name(d.cuEventElapsedTime(e0, quiet))
out["api_in_host_fn"] = calls
# the legacy default stream waits for a blocking stream, not for a non-blocking one
blocking = ck(d.cuStreamCreate(0))
ck(d.cuLaunchHostFunc(blocking, d.CUhostFn(ctypes.cast(cb, ctypes.c_void_p).value), 0))
ck(d.cuLaunchHostFunc(s, d.CUhostFn(ctypes.cast(cb, ctypes.c_void_p).value), 0))
marker = ck(d.cuEventCreate(0))
ck(d.cuEventRecord(marker, 0))
out["legacy_waits_for_blocking"] = [name(d.cuEventQuery(marker)), name(d.cuStreamQuery(blocking))]
ck(d.cuCtxSynchronize())
# leaks at primary-context release
ck(d.cuMemAlloc(4096))
ck(d.cuDevicePrimaryCtxRelease(dev))
out["after_release"] = name(d.cuMemAlloc(64))
out["release_twice"] = name(d.cuDevicePrimaryCtxRelease(dev))
emit(out)
"""
)


def test_driver_strictness(run_child: Any, child_env: Any) -> None:
    child = run_child(_STRICT, child_env(delay_us=30000, GPUSIM_MEMORY_MIB="64"))
    out = child.result
    assert out["before_init"] == "CUDA_ERROR_NOT_INITIALIZED"
    assert out["init_flags"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["bad_ordinal"] == "CUDA_ERROR_INVALID_DEVICE"
    assert out["no_context"] == "CUDA_ERROR_INVALID_CONTEXT"
    assert out["copy_in_bounds"] == "CUDA_SUCCESS"
    for key in ("copy_past_end", "copy_from_interior_past_end", "copy_untracked_device_pointer", "memset_past_end",
                "memset_misaligned", "free_interior", "double_free", "free_host_with_cuMemFree"):  # fmt: skip
        assert out[key] == "CUDA_ERROR_INVALID_VALUE", key
    assert out["free"] == "CUDA_SUCCESS"
    assert out["too_much"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert out["register"] == "CUDA_SUCCESS" and out["unregister"] == "CUDA_SUCCESS"
    assert out["register_overlap"] == "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"
    assert out["unregister_interior"] == "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"
    assert out["stream_bad_flags"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["query_busy"] == "CUDA_ERROR_NOT_READY" and out["query_idle"] == "CUDA_SUCCESS"
    assert out["elapsed_pending"] == "CUDA_ERROR_NOT_READY" and out["elapsed"] is True
    assert out["elapsed_without_timing"] == "CUDA_ERROR_INVALID_HANDLE"
    assert out["api_in_host_fn"][0] == "CUDA_ERROR_NOT_PERMITTED"
    assert out["legacy_waits_for_blocking"] == ["CUDA_ERROR_NOT_READY", "CUDA_ERROR_NOT_READY"]
    assert out["after_release"] == "CUDA_ERROR_INVALID_CONTEXT"
    assert out["release_twice"] == "CUDA_ERROR_INVALID_CONTEXT"
    assert "gpusim: leak at primary context release of device 0: 4096 bytes of device memory" in child.stderr


#: For a name asked for at a CUDA version, the exported symbol cuGetProcAddress answers with (a 13.0
#: driver has no cuLaunchHostFunc_v2: the 10000 entry answers)
_ENTRIES = {
    "cuMemAlloc": {3020: "cuMemAlloc_v2", 13000: "cuMemAlloc_v2"},
    "cuLaunchHostFunc": {13020: "cuLaunchHostFunc"},
    "cuCtxSynchronize": {13000: "cuCtxSynchronize_v2", 12080: "cuCtxSynchronize"},
    "cuEventElapsedTime": {12080: "cuEventElapsedTime_v2"},
}
_ASKED = [(name, version) for name, versions in _ENTRIES.items() for version in versions]

_PROCS = PROC_LOOKUP + f"""
print(json.dumps({{
    "answers": [answers(name, version) for name, version in {_ASKED!r}],
    "alloc_2000": find("cuMemAlloc", 2000)[:2],
    "unknown": find("cuNoSuchFunction", 13000)[:2],
}}))
"""


def test_entry_points_by_name_and_version(run_child: Any, child_env: Any) -> None:
    out = run_child(_PROCS, child_env()).result
    assert dict(zip(_ASKED, out["answers"])) == {(name, version): _ENTRIES[name][version] for name, version in _ASKED}
    assert out["alloc_2000"] == [500, 2]  # CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
    assert out["unknown"] == [500, 1]  # CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND


_MODULES = driver_child(
    r"""
setup()
out = {}
a = ck(d.cuModuleLoadData(image("global")))
b = ck(d.cuModuleLoadData(image("global")))
ga, sa = ck(d.cuModuleGetGlobal(a, b"global"))
gb, sb = ck(d.cuModuleGetGlobal(b, b"global"))
out["globals"] = [int(sa), int(sb), int(ga) != int(gb)]
write = ck(d.cuModuleGetFunction(a, b"write"))
ck(d.cuLaunchKernel(write, 1, 1, 1, 64, 1, 1, 0, 0, 0, 0))
ck(d.cuCtxSynchronize())
def read_u32s(dptr, count):  # device memory: read through the driver, never dereferenced by the host
    buf = (ctypes.c_uint32 * count)()
    ck(d.cuMemcpyDtoH(ctypes.addressof(buf), dptr, 4 * count))
    return list(buf)
out["separate_globals"] = [read_u32s(ga, 4), read_u32s(gb, 4)]
sink = ctypes.create_string_buffer(512)
out["global_copy_past_end"] = name(d.cuMemcpyDtoH(ctypes.addressof(sink), ga, 257))
ck(d.cuModuleUnload(a))
out["global_after_unload"] = name(d.cuMemcpyDtoH(ctypes.addressof(sink), ga, 4))
out["unload_twice"] = name(d.cuModuleUnload(a))
params = [ck(d.cuFuncGetParamInfo(ck(d.cuModuleGetFunction(ck(d.cuModuleLoadData(image("single_counter"))), b"single_counter")), i)) for i in range(4)]
out["params"] = [[int(o), int(s)] for o, s in params]
ptx = ck(d.cuModuleLoadData(image("single_counter", "ptx")))
out["ptx_params"] = [[int(v) for v in ck(d.cuFuncGetParamInfo(ck(d.cuModuleGetFunction(ptx, b"single_counter")), i))] for i in range(4)]
emit(out)
"""
)


def test_modules(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_MODULES, child_env(kernels=kernels)).result
    assert out["globals"] == [256, 256, True]
    assert out["separate_globals"] == [[0, 2, 4, 6], [0, 0, 0, 0]], "two loads of one image share no globals"
    assert out["global_copy_past_end"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["global_after_unload"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["unload_twice"] == "CUDA_ERROR_INVALID_HANDLE"
    assert out["params"] == [[0, 4], [4, 4], [8, 8], [16, 8]]
    assert out["ptx_params"] == out["params"]


_ENUMERATE = driver_child(
    r"""
setup()
module = ck(d.cuModuleLoadData(image("global")))
count = int(ck(d.cuModuleGetFunctionCount(module)))
functions = ck(d.cuModuleEnumerateFunctions(count, module))
names = sorted(bytes(ck(d.cuFuncGetName(f))).decode() for f in functions)
first = ck(d.cuModuleEnumerateFunctions(1, module))
emit({"count": count, "names": names, "first": len(first), "write": "write" in names,
      "unloaded": name(d.cuModuleGetFunctionCount(d.CUmodule(0)))})
"""
)


def test_module_function_enumeration(run_child: Any, child_env: Any, kernels: Any) -> None:
    """cuModuleGetFunctionCount / cuModuleEnumerateFunctions (CUDA 12.4, issue 17's olIterateSymbols)."""
    out = run_child(_ENUMERATE, child_env(kernels=kernels)).result
    assert out["count"] == len(out["names"]) >= 1 and out["write"] is True
    assert out["first"] == 1
    assert out["unloaded"] == "CUDA_ERROR_INVALID_HANDLE"


_PREFETCH = driver_child(
    LOCATIONS
    + r"""
setup()
managed = ck(d.cuMemAllocManaged(4096, 1))
plain = ck(d.cuMemAlloc(4096))
stream = ck(d.cuStreamCreate(0))
ctypes.memset(int(managed), 7, 4096)
out = {
    "to_device": name(d.cuMemPrefetchAsync(managed, 4096, location(DEV), 0, stream)),
    "to_host": name(d.cuMemPrefetchAsync(int(managed) + 1024, 1024, location(HOST), 0, stream)),
    "past_end": name(d.cuMemPrefetchAsync(managed, 4097, location(DEV), 0, stream)),
    "not_managed": name(d.cuMemPrefetchAsync(plain, 64, location(DEV), 0, stream)),
    "flags": name(d.cuMemPrefetchAsync(managed, 64, location(DEV), 1, stream)),
    "no_device": name(d.cuMemPrefetchAsync(managed, 64, location(DEV, 9), 0, stream)),
}
ck(d.cuStreamSynchronize(stream))
out["data"] = ctypes.string_at(int(managed), 4096) == b"\x07" * 4096
emit(out)
"""
)


def test_prefetch_of_managed_memory(run_child: Any, child_env: Any) -> None:
    """cuMemPrefetchAsync (issue 17's olMemPrefetch): managed ranges only, a device or the host, flags 0."""
    out = run_child(_PREFETCH, child_env()).result
    assert out["to_device"] == out["to_host"] == "CUDA_SUCCESS" and out["data"] is True
    assert out["past_end"] == out["not_managed"] == out["flags"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["no_device"] == "CUDA_ERROR_INVALID_DEVICE"
