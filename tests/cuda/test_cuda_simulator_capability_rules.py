"""The simulated CUDA driver's rules for what a device or a function may not do (issue 29), each
shown with raw cuda.bindings calls (no offload), as tests/simulators/README.md cites them:

- occupancy (NVIDIA's ``cuda_occupancy.h``): a block asking for more dynamic shared memory than the
  function's current ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` fits zero blocks until
  ``cuFuncSetAttribute`` raises the limit;
- ``cuMemPrefetchAsync`` needs ``CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS`` on the destination
  GPU and on the stream's device (``GPUSIM_CUDA_MANAGED_CONCURRENT``), else ``CUDA_ERROR_INVALID_DEVICE``;
- a cooperative launch needs ``CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH`` (``GPUSIM_CUDA_COOPERATIVE``).
"""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import LOCATIONS, raw_child

pytestmark = pytest.mark.usefixtures("simulated")

_OCCUPANCY = raw_child(
    r"""
module = ck(d.cuModuleLoadData((KERNELS / "localmem.cubin").read_bytes()))
k = ck(d.cuModuleGetFunction(module, b"localmem"))
A = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
sms = ck(d.cuDeviceGetAttribute(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev))
out = {"limit_before": ck(d.cuFuncGetAttribute(A, k))}
out["blocks_32k"] = ck(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(k, 64, 32 * 1024))
out["blocks_64k_before"] = ck(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(k, 64, 64 * 1024))
out["potential_64k_before"] = ck(d.cuOccupancyMaxPotentialBlockSize(k, 0, 64 * 1024, 0))
stream = ck(d.cuStreamCreate(0))
mem = ck(d.cuMemAlloc(64 * 4))
arg = (ctypes.c_uint64 * 1)(int(mem))
params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
out["launch_64k_before"] = name(d.cuLaunchKernel(k, 1, 1, 1, 64, 1, 1, 64 * 1024, stream, ctypes.addressof(params), 0))
ck(d.cuFuncSetAttribute(k, A, 64 * 1024))
out["limit_after"] = ck(d.cuFuncGetAttribute(A, k))
out["blocks_64k_after"] = ck(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(k, 64, 64 * 1024))
out["potential_64k_after"] = ck(d.cuOccupancyMaxPotentialBlockSize(k, 0, 64 * 1024, 0))
out["blocks_80k_after"] = ck(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(k, 64, 80 * 1024))
out["launch_64k_after"] = name(d.cuLaunchKernel(k, 1, 1, 1, 64, 1, 1, 64 * 1024, stream, ctypes.addressof(params), 0))
ck(d.cuStreamSynchronize(stream))
out["sms"] = sms
ck(d.cuMemFree(mem)); ck(d.cuStreamDestroy(stream)); ck(d.cuModuleUnload(module))
emit(out)
"""
)


def test_occupancy_of_dynamic_shared_memory_above_the_functions_limit_is_zero(
    run_child: Any, child_env: Any, kernels: Any
) -> None:
    """cuda_occupancy.h (cudaOccMaxBlocksPerSMSmemLimit): 64 KiB of dynamic shared memory exceeds a
    fresh function's 48 KiB limit, so it fits no block (and the launch is refused) until
    cuFuncSetAttribute raises the limit; then it fits, and 80 KiB (above the new limit) does not."""
    out = run_child(_OCCUPANCY, child_env(kernels=kernels)).result
    assert out["limit_before"] <= 48 * 1024 and out["blocks_32k"] >= 1
    assert out["blocks_64k_before"] == 0 and out["potential_64k_before"] == [0, 0]
    assert out["launch_64k_before"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["limit_after"] == 64 * 1024 and out["blocks_64k_after"] >= 1
    min_grid, block = out["potential_64k_after"]
    assert block >= 32 and min_grid >= out["sms"]
    assert out["blocks_80k_after"] == 0
    assert out["launch_64k_after"] == "CUDA_SUCCESS"


_PREFETCH = raw_child(
    LOCATIONS
    + r"""
managed = ck(d.cuMemAllocManaged(4096, 1))
attr = d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
stream0 = ck(d.cuStreamCreate(0))
out = {"attribute": [ck(d.cuDeviceGetAttribute(attr, i)) for i in range(2)]}
out["to_0_on_0"] = name(d.cuMemPrefetchAsync(managed, 4096, location(DEV, 0), 0, stream0))
out["to_host_on_0"] = name(d.cuMemPrefetchAsync(managed, 4096, location(HOST), 0, stream0))
out["to_1_on_0"] = name(d.cuMemPrefetchAsync(managed, 4096, location(DEV, 1), 0, stream0))
ctx1 = ck(d.cuDevicePrimaryCtxRetain(ck(d.cuDeviceGet(1))))
ck(d.cuCtxSetCurrent(ctx1))
stream1 = ck(d.cuStreamCreate(0))
out["to_1_on_1"] = name(d.cuMemPrefetchAsync(managed, 4096, location(DEV, 1), 0, stream1))
out["to_host_on_1"] = name(d.cuMemPrefetchAsync(managed, 4096, location(HOST), 0, stream1))
ck(d.cuStreamDestroy(stream1))
ck(d.cuCtxSetCurrent(ctx))
ck(d.cuStreamDestroy(stream0)); ck(d.cuMemFree(managed))
ck(d.cuDevicePrimaryCtxRelease(ck(d.cuDeviceGet(1))))
emit(out)
"""
)


def test_prefetch_needs_concurrent_managed_access(run_child: Any, child_env: Any) -> None:
    """cuMemPrefetchAsync: the destination GPU "must have non-zero value for the device attribute
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS. Additionally, hStream must be associated with a
    device that has" it. Device 1 lacks it (GPUSIM_CUDA_MANAGED_CONCURRENT=1,0): a prefetch to it,
    or on its stream (to the host too), is CUDA_ERROR_INVALID_DEVICE; device 0 still prefetches."""
    out = run_child(_PREFETCH, child_env(devices=2, GPUSIM_CUDA_MANAGED_CONCURRENT="1,0")).result
    assert out["attribute"] == [1, 0]
    assert out["to_0_on_0"] == out["to_host_on_0"] == "CUDA_SUCCESS"
    assert out["to_1_on_0"] == out["to_1_on_1"] == out["to_host_on_1"] == "CUDA_ERROR_INVALID_DEVICE"


_COOPERATIVE = raw_child(
    r"""
module = ck(d.cuModuleLoadData((KERNELS / "foo.cubin").read_bytes()))
foo = ck(d.cuModuleGetFunction(module, b"foo"))
mem = ck(d.cuMemAlloc(4 * 256))
arg = (ctypes.c_uint64 * 1)(int(mem))
params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
stream = ck(d.cuStreamCreate(0))


def launch_config():
    config = d.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = 4, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = 64, 1, 1
    config.hStream = stream
    return config


# two configs, each set once: cuda-bindings 12.9 frees a CUlaunchConfig's attrs array twice when
# its attrs are set again (glibc aborts at exit: "free(): double free detected")
cooperative = launch_config()
attribute = d.CUlaunchAttribute()
attribute.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
attribute.value.cooperative = 1
cooperative.attrs = [attribute]
cooperative.numAttrs = 1
out = {"attribute": ck(d.cuDeviceGetAttribute(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev))}
out["cooperative"] = name(d.cuLaunchKernelEx(cooperative, foo, ctypes.addressof(params), 0))
out["plain"] = name(d.cuLaunchKernelEx(launch_config(), foo, ctypes.addressof(params), 0))
ck(d.cuStreamSynchronize(stream))
ck(d.cuStreamDestroy(stream)); ck(d.cuMemFree(mem)); ck(d.cuModuleUnload(module))
emit(out)
"""
)


@pytest.mark.parametrize("knob", ["1", "0"])
def test_cooperative_launches_need_the_devices_attribute(run_child: Any, child_env: Any, kernels: Any, knob: str) -> None:
    """cuLaunchCooperativeKernel: "The device on which this kernel is invoked must have a non-zero
    value for the device attribute CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH". Without it
    (GPUSIM_CUDA_COOPERATIVE=0) a cooperative launch is CUDA_ERROR_NOT_SUPPORTED; a plain one runs."""
    out = run_child(_COOPERATIVE, child_env(kernels=kernels, GPUSIM_CUDA_COOPERATIVE=knob)).result
    assert out["attribute"] == int(knob) and out["plain"] == "CUDA_SUCCESS"
    assert out["cooperative"] == ("CUDA_SUCCESS" if knob == "1" else "CUDA_ERROR_NOT_SUPPORTED")
