"""The simulated HIP runtime as hip-python sees it (each test in a child process).

These pin the HIP behaviour the backend relies on: lazy initialisation, the last-error rules,
the device properties struct (hipDeviceProp_tR0600) and attributes, module loading by target,
the HIP_LAUNCH_PARAM_* extra array (END = 3) and the argument-size check.
"""

from __future__ import annotations

PRELUDE = """
import ctypes
from hip import hip
def st(result):
    return int(result[0])
"""


def test_lazy_init_and_last_error(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
out = {}
status, ptr = hip.hipMalloc(64)          # no hipInit first: HIP initialises lazily
out["malloc"] = int(status)
out["last_clean"] = st(hip.hipGetLastError())
out["init_flags"] = st(hip.hipInit(1))   # flags must be 0
out["peek"] = st(hip.hipPeekAtLastError())
out["after_success"] = (st(hip.hipFree(ptr)), st(hip.hipPeekAtLastError()))  # a success keeps it
out["get"] = st(hip.hipGetLastError())   # returns and clears
out["cleared"] = st(hip.hipGetLastError())
s = hip.hipStreamCreateWithFlags(1)[1]
out["free_bad"] = st(hip.hipFree(12345))
out["not_ready_not_recorded"] = st(hip.hipGetLastError())
out["init"] = st(hip.hipInit(0))
out["count"] = [int(x) for x in hip.hipGetDeviceCount()]
hip.hipStreamDestroy(s)
emit(out)
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result["malloc"] == 0 and result["last_clean"] == 0
    assert result["init_flags"] == 1 and result["peek"] == 1  # hipErrorInvalidValue
    assert result["after_success"] == [0, 1]
    assert result["get"] == 1 and result["cleared"] == 0
    assert result["free_bad"] == 1 and result["not_ready_not_recorded"] == 1
    assert result["init"] == 0 and result["count"] == [0, 1]


def test_no_device(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
from offload_amdgpu import AMDGPUBackend
backend = AMDGPUBackend()
emit({"init": st(hip.hipInit(0)), "count": [int(x) for x in hip.hipGetDeviceCount()],
      "malloc": st(hip.hipMalloc(8)), "devices": len(backend.init()), "reason": backend.reason})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_DEVICES": "0"},
    )
    assert result["init"] == 100 and result["count"] == [100, 0] and result["malloc"] == 100
    assert result["devices"] == 0
    assert result["reason"] == "hipInit: hipErrorNoDevice (100): no ROCm-capable device is detected"


def test_device_properties_struct_and_attributes(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
try:  # hip-python 10.x: hipGetDeviceProperties(device) -> (status, props)
    status, props = hip.hipGetDeviceProperties(0)
except TypeError:  # 6.4 / 7.x: hipGetDeviceProperties(props, device) -> (status,)
    props = hip.hipDeviceProp_t()
    status, = hip.hipGetDeviceProperties(props, 0)
A = hip.hipDeviceAttribute_t
attr = lambda name: hip.hipDeviceGetAttribute(getattr(A, name), 0)[1]
text = lambda v: (bytes(v).split(b"\\0")[0].decode() if isinstance(v, (bytes, bytearray)) else str(v))
emit({"status": int(status), "arch": text(props.gcnArchName), "name": text(props.name), "warp": props.warpSize,
      "mem": props.totalGlobalMem, "threads": props.maxThreadsPerBlock, "cus": props.multiProcessorCount,
      "lds": props.sharedMemPerBlock, "attr_warp": attr("hipDeviceAttributeWarpSize"),
      "attr_cus": attr("hipDeviceAttributeMultiprocessorCount"), "total": int(hip.hipDeviceTotalMem(0)[1]),
      "bad_attr": st(hip.hipDeviceGetAttribute(A.hipDeviceAttributeMaxTexture1DWidth, 0)),
      "bad_device": st(hip.hipDeviceGetAttribute(A.hipDeviceAttributeWarpSize, 3))})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result["status"] == 0 and result["arch"] == "gfx90a:sramecc+:xnack-"
    assert "gpusim" in result["name"]  # a simulator says so
    assert result["warp"] == result["attr_warp"] == 64
    assert result["cus"] == result["attr_cus"] == 104
    assert result["mem"] == result["total"] == 1 << 30 and result["threads"] == 1024 and result["lds"] == 65536
    assert result["bad_attr"] == 1 and result["bad_device"] == 101


def test_modules_and_launch_rules(hip_build, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + f"""
import struct
from pathlib import Path
programs, other = Path({str(hip_build.programs)!r}), Path({str(hip_build.other)!r})
out = {{}}
out["wrong_target"] = st(hip.hipModuleLoadData((other / "foo.hsaco").read_bytes()))
out["garbage"] = st(hip.hipModuleLoadData(b"\\x7fELF" + b"\\0" * 200))
status, module = hip.hipModuleLoadData((programs / "foo.hsaco").read_bytes())
out["load"] = int(status)
out["missing"] = st(hip.hipModuleGetFunction(module, b"nope"))
status, fn = hip.hipModuleGetFunction(module, b"foo")
status, buf = hip.hipMalloc(64 * 4)
arg = ctypes.c_void_p(int(buf))
size = ctypes.c_size_t(8)
def extra(size_value, end=3):
    size.value = size_value
    return (ctypes.c_void_p * 5)(1, ctypes.addressof(arg), 2, ctypes.addressof(size), end)
e = extra(8)
out["launch"] = st(hip.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, None, None, ctypes.addressof(e)))
out["sync"] = st(hip.hipStreamSynchronize(None))
host = (ctypes.c_uint32 * 64)()
hip.hipMemcpyDtoH(host, buf, 64 * 4)
out["values"] = list(host)
short = extra(4)
out["short"] = st(hip.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, None, None, ctypes.addressof(short)))
bad_end = extra(8, end=0)   # CUDA's CU_LAUNCH_PARAM_END (0) is not HIP's (3)
out["cuda_end"] = st(hip.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, None, None, ctypes.addressof(bad_end)))
out["lds"] = st(hip.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 65537, None, None, ctypes.addressof(e)))
out["block"] = st(hip.hipModuleLaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, None, None, ctypes.addressof(e)))
out["unload"] = st(hip.hipModuleUnload(module))
out["stale"] = st(hip.hipModuleGetFunction(module, b"foo"))
emit(out)
""",
        hip_build.env(),
    )
    assert result["wrong_target"] == 209  # hipErrorNoBinaryForGpu
    assert result["garbage"] == 200  # hipErrorInvalidImage
    assert result["load"] == 0 and result["missing"] == 500  # hipErrorNotFound
    assert result["launch"] == 0 and result["sync"] == 0 and result["values"] == list(range(64))
    assert result["short"] == 1 and result["cuda_end"] == 1 and result["lds"] == 1 and result["block"] == 1
    assert result["unload"] == 0 and result["stale"] == 400


def test_out_of_bounds_copy_is_refused(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
status, buf = hip.hipMalloc(16)
host = (ctypes.c_uint8 * 64)()
emit({"in": st(hip.hipMemcpyHtoD(buf, host, 16)), "over": st(hip.hipMemcpyHtoD(buf, host, 17)),
      "inside": st(hip.hipMemcpyHtoD(int(buf) + 8, host, 8)), "fill_over": st(hip.hipMemsetD32Async(buf, 1, 5, None)),
      "unregistered": st(hip.hipHostUnregister(host)), "register": st(hip.hipHostRegister(host, 64, 0)),
      "again": st(hip.hipHostRegister(host, 64, 0)), "unregister": st(hip.hipHostUnregister(host))})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result["in"] == 0 and result["inside"] == 0
    assert result["over"] == 1 and result["fill_over"] == 1
    assert result["unregistered"] == 713 and result["register"] == 0 and result["again"] == 712
    assert result["unregister"] == 0


def test_stream_get_device(hip_runtime, hip_child) -> None:
    """hipStreamGetDevice names a stream's device (the null stream's: the current one), which the
    backend checks before adopting another library's stream."""
    result = hip_child(
        PRELUDE
        + """
s0 = hip.hipStreamCreateWithFlags(1)[1]
hip.hipSetDevice(1)
s1 = hip.hipStreamCreateWithFlags(1)[1]
out = [[int(v) for v in hip.hipStreamGetDevice(s)] for s in (s0, s1, None)]
hip.hipSetDevice(0)
out.append([int(v) for v in hip.hipStreamGetDevice(None)])
out.append([st(hip.hipStreamDestroy(s0)), st(hip.hipStreamDestroy(s1))])
emit(out)
""",
        {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_DEVICES": "2"},
    )
    assert result == [[0, 0], [0, 1], [0, 1], [0, 0], [0, 0]]
