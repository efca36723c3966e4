"""The simulated CUDA driver's calls that other CUDA libraries (cuda.core) make, shown with raw
cuda.bindings calls in child processes (no offload): stream priorities and queries, created
contexts, libraries and kernels, ``cuLaunchKernelEx`` with launch attributes (and bad
configurations), pointer attributes, and the GPUSIM_FAULT_AFTER knob (stream-ordered memory
pools: test_cuda_simulator_pool_rules.py). tests/simulators/README.md cites the documentation of
each rule."""

from __future__ import annotations

from typing import Any

import pytest
from cuda.bindings import driver  # what these bindings can name (importing loads no driver)

from cuda_child import RAW_PRELUDE, assert_results, raw_child

pytestmark = pytest.mark.usefixtures("simulated")


_STREAMS = raw_child(
    r"""
out = {"range": [int(v) for v in ck(d.cuCtxGetStreamPriorityRange())]}
high = ck(d.cuStreamCreateWithPriority(1, -10))   # clamped to the greatest priority
low = ck(d.cuStreamCreateWithPriority(0, 3))      # clamped to the least
out["priorities"] = [ck(d.cuStreamGetPriority(high)), ck(d.cuStreamGetPriority(low)), ck(d.cuStreamGetPriority(0))]
out["flags"] = [int(ck(d.cuStreamGetFlags(high))), int(ck(d.cuStreamGetFlags(low)))]
out["ctx"] = [int(ck(d.cuStreamGetCtx(high))) == int(ctx), int(ck(d.cuStreamGetCtx(0))) == int(ctx)]
out["device"] = int(ck(d.cuStreamGetDevice(high)))
ids = [int(ck(d.cuStreamGetId(high))), int(ck(d.cuStreamGetId(low))), int(ck(d.cuStreamGetId(high)))]
out["ids"] = [ids[0] != ids[1], ids[0] == ids[2]]
out["capturing"] = int(ck(d.cuStreamIsCapturing(high)))
out["bad_flags"] = name(d.cuStreamCreateWithPriority(2, 0))
dev1, ctx1 = setup(1)
other = ck(d.cuStreamCreate(1))
ck(d.cuCtxSetCurrent(ctx))
out["other_device"] = [int(ck(d.cuStreamGetDevice(other))), int(ck(d.cuStreamGetCtx(other))) == int(ctx1)]
ck(d.cuStreamDestroy(low))
out["destroyed"] = name(d.cuStreamGetPriority(low))
emit(out)
"""
)


def test_stream_priorities_and_queries(run_child: Any, child_env: Any) -> None:
    """Priorities are clamped to the context's range (0 least, -5 greatest) and reported; a
    stream tells its context, device and a stable unique id; no stream is capturing."""
    out = run_child(_STREAMS, child_env(devices=2)).result
    assert out["range"] == [0, -5]
    assert out["priorities"] == [-5, 0, 0]
    assert out["flags"] == [1, 0]
    assert out["ctx"] == [True, True]
    assert out["device"] == 0 and out["ids"] == [True, True] and out["capturing"] == 0
    assert out["bad_flags"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["other_device"] == [1, True]
    assert out["destroyed"] == "CUDA_ERROR_INVALID_HANDLE"


_CONTEXTS = (
    RAW_PRELUDE
    + r"""
dev, primary = setup()
out = {}
prim_stream = ck(d.cuStreamCreate(1))
module = ck(d.cuModuleLoadData((KERNELS / "foo.cubin").read_bytes()))
foo = ck(d.cuModuleGetFunction(module, b"foo"))
mem = ck(d.cuMemAlloc(256))
arg = ctypes.c_uint64(int(mem))
params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
created = ck(d.cuCtxCreate(None, 0, dev))
out["current_is_created"] = int(ck(d.cuCtxGetCurrent())) == int(created)
out["ids_differ"] = int(ck(d.cuCtxGetId(created))) != int(ck(d.cuCtxGetId(primary)))
out["api_version"] = int(ck(d.cuCtxGetApiVersion(created)))
theirs = ck(d.cuStreamCreate(1))
out["their_stream_ctx"] = int(ck(d.cuStreamGetCtx(theirs))) == int(created)
# a stream belongs to its context: the primary context's stream under the created one is refused
out["launch_on_primary_stream"] = name(d.cuLaunchKernel(foo, 1, 1, 1, 64, 1, 1, 0, prim_stream, ctypes.addressof(params), 0))
out["launch_on_own_stream"] = name(d.cuLaunchKernel(foo, 1, 1, 1, 64, 1, 1, 0, theirs, ctypes.addressof(params), 0))
ck(d.cuStreamSynchronize(theirs))
out["destroy"] = name(d.cuCtxDestroy(created))
out["popped_back_to_primary"] = int(ck(d.cuCtxGetCurrent())) == int(primary)
out["dead_stream"] = name(d.cuStreamQuery(theirs))
out["destroy_again"] = name(d.cuCtxDestroy(created))
out["push_dead"] = name(d.cuCtxPushCurrent(created))
out["destroy_primary"] = name(d.cuCtxDestroy(primary))
out["primary_still_works"] = name(d.cuStreamSynchronize(prim_stream))
emit(out)
"""
)


def test_created_contexts(run_child: Any, child_env: Any, kernels: Any) -> None:
    """cuCtxCreate makes a context current (pushed); its streams are its own; cuCtxDestroy pops it
    where current and kills its streams; a destroyed context and a primary one are not destroyed."""
    out = run_child(_CONTEXTS, child_env(kernels=kernels)).result
    assert out["current_is_created"] is True and out["ids_differ"] is True
    assert out["api_version"] == 3020 and out["their_stream_ctx"] is True
    assert out["popped_back_to_primary"] is True
    assert_results(
        out,
        CUDA_SUCCESS=["launch_on_own_stream", "destroy", "primary_still_works"],
        CUDA_ERROR_INVALID_HANDLE=["launch_on_primary_stream", "dead_stream"],
        CUDA_ERROR_INVALID_CONTEXT=["destroy_again", "push_dead", "destroy_primary"],
    )


_LIBRARIES = (
    RAW_PRELUDE
    + r"""
import numpy as np
ck(d.cuInit(0))
out = {}
code = (KERNELS / "saxpy.cubin").read_bytes()
# loaded with no context current (context-independent loading)
lib = ck(d.cuLibraryLoadData(code, None, None, 0, None, None, 0))
kernel = ck(d.cuLibraryGetKernel(lib, b"saxpy"))
out["missing"] = name(d.cuLibraryGetKernel(lib, b"nope"))
out["count"] = int(ck(d.cuLibraryGetKernelCount(lib)))
out["name"] = ck(d.cuKernelGetName(kernel)).decode()
out["params"] = [[int(v) for v in ck(d.cuKernelGetParamInfo(kernel, i))] for i in range(4)]
out["param_past_end"] = name(d.cuKernelGetParamInfo(kernel, 4))
out["max_threads_dev1"] = int(ck(d.cuKernelGetAttribute(d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel, 1)))
out["bad_image"] = name(d.cuLibraryLoadData(b"not an image" * 8, None, None, 0, None, None, 0))
out["no_context_function"] = name(d.cuKernelGetFunction(kernel))
results = []
for ordinal in (0, 1):  # the kernel, cast to a function, in each device's context (loaded lazily on 1)
    dev, ctx = setup(ordinal)
    n = 256
    x = np.arange(n, dtype=np.float32)
    dx, dy = ck(d.cuMemAlloc(n * 4)), ck(d.cuMemAlloc(n * 4))
    ck(d.cuMemcpyHtoD(dx, x.ctypes.data, n * 4))
    ck(d.cuMemsetD32(dy, 0x3F800000, n))
    vals = [ctypes.c_float(2.0), ctypes.c_uint64(int(dx)), ctypes.c_uint64(int(dy)), ctypes.c_uint64(n)]
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in vals])
    ck(d.cuLaunchKernel(d.CUfunction(int(kernel)), 1, 1, 1, n, 1, 1, 0, 0, ctypes.addressof(params), 0))
    y = np.empty(n, dtype=np.float32)
    ck(d.cuMemcpyDtoH(y.ctypes.data, dy, n * 4))
    f = ck(d.cuKernelGetFunction(kernel))
    results.append([bool(np.array_equal(y, 2 * x + 1)), ck(d.cuFuncGetName(f)).decode()])
    ck(d.cuMemFree(dx)); ck(d.cuMemFree(dy))
out["launched"] = results
out["module"] = name(d.cuLibraryGetModule(lib))
ck(d.cuLibraryUnload(lib))
out["after_unload"] = [name(d.cuKernelGetName(kernel)), name(d.cuLibraryGetKernel(lib, b"saxpy")),
                       name(d.cuLaunchKernel(d.CUfunction(int(kernel)), 1, 1, 1, 1, 1, 1, 0, 0, 0, 0))]
emit(out)
"""
)


def test_libraries_and_kernels(run_child: Any, child_env: Any, kernels: Any) -> None:
    """A library loads without a context, names its kernels and their parameters, loads lazily on
    another device, launches through its kernel cast to a function, and dies with cuLibraryUnload."""
    out = run_child(_LIBRARIES, child_env(devices=2, kernels=kernels)).result
    assert out["missing"] == "CUDA_ERROR_NOT_FOUND" and out["count"] == 1 and out["name"] == "saxpy"
    assert out["params"] == [[0, 4], [8, 8], [16, 8], [24, 8]]
    assert out["param_past_end"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["max_threads_dev1"] == 1024
    assert out["bad_image"] == "CUDA_ERROR_INVALID_IMAGE"
    assert out["no_context_function"] == "CUDA_ERROR_INVALID_CONTEXT"
    assert out["launched"] == [[True, "saxpy"], [True, "saxpy"]]
    assert out["module"] == "CUDA_SUCCESS"
    assert out["after_unload"] == ["CUDA_ERROR_INVALID_HANDLE"] * 3


_LAUNCH_EX = raw_child(
    r"""
L = d.CUlaunchAttributeID
module = ck(d.cuModuleLoadData((KERNELS / "foo.cubin").read_bytes()))
foo = ck(d.cuModuleGetFunction(module, b"foo"))
mem = ck(d.cuMemAlloc(4 * 64 * 8192))
arg = ctypes.c_uint64(int(mem))
params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
s = ck(d.cuStreamCreate(1))

def config(grid=1, block=64, attrs=()):
    c = d.CUlaunchConfig()
    c.gridDimX, c.gridDimY, c.gridDimZ = grid, 1, 1
    c.blockDimX, c.blockDimY, c.blockDimZ = block, 1, 1
    c.sharedMemBytes = 0
    c.hStream = s
    made = []
    for key, field, value in attrs:
        a = d.CUlaunchAttribute()
        a.id = key
        if field == "clusterDim":
            a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = value
        elif field:
            setattr(a.value, field, value)
        made.append(a)
    c.attrs = made
    c.numAttrs = len(made)
    return c

def launch(c):
    return name(d.cuLaunchKernelEx(c, foo, ctypes.addressof(params), 0))

out = {}
out["plain"] = launch(config())
ck(d.cuStreamSynchronize(s))
got = (ctypes.c_uint32 * 64)()
ck(d.cuMemcpyDtoH(ctypes.addressof(got), mem, 256))
out["data"] = list(got) == list(range(64))
out["hints"] = launch(config(attrs=[(L.CU_LAUNCH_ATTRIBUTE_PRIORITY, "priority", -2),
                                    (L.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, "programmaticStreamSerializationAllowed", 1)]))
out["cooperative"] = launch(config(grid=4, attrs=[(L.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, "cooperative", 1)]))
out["cooperative_too_large"] = launch(config(grid=132 * 32 + 1, attrs=[(L.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, "cooperative", 1)]))
out["cluster"] = launch(config(grid=4, attrs=[(L.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, "clusterDim", (2, 1, 1))]))
out["cluster_not_dividing"] = launch(config(grid=3, attrs=[(L.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, "clusterDim", (2, 1, 1))]))
out["cluster_16"] = launch(config(grid=16, attrs=[(L.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, "clusterDim", (16, 1, 1))]))
ck(d.cuFuncSetAttribute(foo, d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))
out["cluster_16_non_portable"] = launch(config(grid=16, attrs=[(L.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, "clusterDim", (16, 1, 1))]))
out["programmatic_event"] = launch(config(attrs=[(L.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, None, None)]))
if hasattr(L, "CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE"):  # bindings 13.1+ only
    out["unknown_to_13_0"] = launch(config(attrs=[(L.CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE, None, None)]))
out["block_too_big"] = launch(config(block=2048))
out["grid_zero"] = launch(config(grid=0))
out["no_function"] = name(d.cuLaunchKernelEx(config(), 0, ctypes.addressof(params), 0))
ck(d.cuStreamSynchronize(s))
emit(out)
"""
)


def test_launch_kernel_ex_and_its_attributes(run_child: Any, child_env: Any, kernels: Any) -> None:
    """cuLaunchKernelEx launches as cuLaunchKernel; hints are accepted; a cooperative grid must be
    co-resident; clusters must divide the grid and stay within 8 blocks (16 when the function
    allows non-portable sizes); unmodelled attributes are NOT_SUPPORTED, unknown ones refused."""
    out = run_child(_LAUNCH_EX, child_env(kernels=kernels)).result
    assert out["data"] is True
    assert_results(
        out,
        CUDA_SUCCESS=["plain", "hints", "cooperative", "cluster", "cluster_16_non_portable"],
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE=["cooperative_too_large"],
        CUDA_ERROR_INVALID_CLUSTER_SIZE=["cluster_not_dividing", "cluster_16"],
        CUDA_ERROR_NOT_SUPPORTED=["programmatic_event"],
    )
    if hasattr(driver.CUlaunchAttributeID, "CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE"):
        assert out["unknown_to_13_0"] == "CUDA_ERROR_INVALID_VALUE"
    else:  # these bindings cannot name it
        assert "unknown_to_13_0" not in out
    assert out["block_too_big"] != "CUDA_SUCCESS" and out["grid_zero"] != "CUDA_SUCCESS"
    assert out["no_function"] == "CUDA_ERROR_INVALID_HANDLE"


_POINTERS = raw_child(
    r"""
P = d.CUpointer_attribute
out = {}
mem = ck(d.cuMemAlloc(1000))
pinned = ck(d.cuMemAllocHost(64))
managed = ck(d.cuMemAllocManaged(64, 1))
get = lambda a, p: ck(d.cuPointerGetAttribute(a, p))
out["device"] = [int(get(P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, mem)), int(get(P.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mem)),
                 int(get(P.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, int(mem) + 100)) == int(mem),
                 int(get(P.CU_POINTER_ATTRIBUTE_RANGE_SIZE, int(mem) + 100)), int(get(P.CU_POINTER_ATTRIBUTE_IS_MANAGED, mem)),
                 int(get(P.CU_POINTER_ATTRIBUTE_CONTEXT, mem)) == int(ctx)]
out["device_host_pointer"] = name(d.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_HOST_POINTER, mem))
out["pinned"] = [int(get(P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pinned)), int(get(P.CU_POINTER_ATTRIBUTE_HOST_POINTER, pinned)) == int(pinned)]
out["managed"] = [int(get(P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, managed)), int(get(P.CU_POINTER_ATTRIBUTE_IS_MANAGED, managed))]
pageable = ctypes.create_string_buffer(64)
out["pageable"] = name(d.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ctypes.addressof(pageable)))
err, values = d.cuPointerGetAttributes(2, [P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, P.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL], ctypes.addressof(pageable))
out["pageable_plural"] = [name(err), [int(v) for v in values]]
emit(out)
"""
)


def test_pointer_attributes(run_child: Any, child_env: Any) -> None:
    """Unified addressing: every driver allocation tells its memory type, device, range and
    context; pageable memory is unknown to cuPointerGetAttribute (INVALID_VALUE) while
    cuPointerGetAttributes answers with NULL values."""
    out = run_child(_POINTERS, child_env()).result
    assert out["device"] == [2, 0, True, 1000, 0, True]
    assert out["device_host_pointer"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["pinned"] == [1, True]
    assert out["managed"] == [2, 1]
    assert out["pageable"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["pageable_plural"] == ["CUDA_SUCCESS", [0, 0]]


_FAULT_AFTER = raw_child(
    r"""
mem = ck(d.cuMemAlloc(64))
s = ck(d.cuStreamCreate(1))
out = [name(d.cuMemsetD8Async(mem, 1, 64, s)), name(d.cuStreamSynchronize(s)),
       name(d.cuMemsetD8Async(mem, 2, 64, s)), name(d.cuStreamSynchronize(s)),
       name(d.cuMemsetD8Async(mem, 3, 64, s)), name(d.cuCtxSynchronize())]
emit(out)
"""
)


def test_fault_after_knob(run_child: Any, child_env: Any) -> None:
    """GPUSIM_FAULT_AFTER=2: the device's second operation faults (sticky ILLEGAL_ADDRESS), as a
    kernel touching unmapped memory would; every later call needing the context returns it."""
    out = run_child(_FAULT_AFTER, child_env(GPUSIM_FAULT_AFTER="2")).result
    assert out == ["CUDA_SUCCESS"] * 3 + ["CUDA_ERROR_ILLEGAL_ADDRESS"] * 3
