"""The simulated CUDA driver's stream-ordered memory pools, shown with raw cuda.bindings calls in
child processes (no offload): the device's current pool, frees when the stream gets there (and
the refusals: a double free, memory used after its free ran, a destroyed or default pool), the
release threshold, maxSize, and allocations used in stream order across streams.
tests/simulators/README.md cites the documentation of each rule."""

from __future__ import annotations

from typing import Any

import pytest
from cuda.bindings import driver  # what these bindings can name (importing loads no driver)

from cuda_child import RAW_PRELUDE, assert_results, raw_child

pytestmark = pytest.mark.usefixtures("simulated")


_POOLS = raw_child(
    r"""
A = d.CUmemPool_attribute
P = d.CUpointer_attribute
out = {}
default = ck(d.cuDeviceGetDefaultMemPool(dev))
out["current_is_default"] = int(ck(d.cuDeviceGetMemPool(dev))) == int(default)
loc = d.CUmemLocation()
loc.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
loc.id = 0
if hasattr(d, "cuMemGetMemPool"):  # CUDA 13.0's call: cuda-bindings 12 have no binding for it
    out["location_form"] = int(ck(d.cuMemGetMemPool(loc, d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED))) == int(default)
attr = lambda pool, a: int(ck(d.cuMemPoolGetAttribute(pool, a)))
s = ck(d.cuStreamCreate(1))
p = ck(d.cuMemAllocAsync(4096, s))
ck(d.cuStreamSynchronize(s))  # s reached the allocation: the legacy stream's copies below may use it
out["pool_of_pointer"] = int(ck(d.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p))) == int(default)
out["used"] = attr(default, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
# free behind a held stream: the memory is valid until the free runs
gate = threading.Event()
ck(d.cuLaunchHostFunc(s, host_fn(lambda: gate.wait(30)), 0))
out["free_async"] = name(d.cuMemFreeAsync(p, s))
out["free_async_twice"] = name(d.cuMemFreeAsync(p, s))
out["free_while_pending"] = name(d.cuMemFree(p))
host = (ctypes.c_uint8 * 16)()
out["read_before_free_ran"] = name(d.cuMemcpyDtoH(ctypes.addressof(host), p, 16))
gate.set()
ck(d.cuStreamSynchronize(s))
out["read_after_free_ran"] = name(d.cuMemcpyDtoH(ctypes.addressof(host), p, 16))
out["free_after_free_ran"] = name(d.cuMemFreeAsync(p, s))
out["after_free"] = [attr(default, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), attr(default, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
                     attr(default, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH)]
# a release threshold keeps freed memory reserved; trimming releases it
ck(d.cuMemPoolSetAttribute(default, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, d.cuuint64_t(1 << 20)))
q = ck(d.cuMemAllocAsync(8192, s))
ck(d.cuMemFreeAsync(q, s))
ck(d.cuStreamSynchronize(s))
out["kept"] = [attr(default, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT), attr(default, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)]
ck(d.cuMemPoolTrimTo(default, 0))
out["trimmed"] = attr(default, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
out["set_read_only"] = name(d.cuMemPoolSetAttribute(default, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, d.cuuint64_t(0)))
out["set_high_nonzero"] = name(d.cuMemPoolSetAttribute(default, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH, d.cuuint64_t(5)))
ck(d.cuMemPoolSetAttribute(default, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH, d.cuuint64_t(0)))
out["high_reset"] = attr(default, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH)
out["destroy_default"] = name(d.cuMemPoolDestroy(default))

def props(alloc_type=1, location_type=1, location_id=0, handle_types=0, max_size=0):
    pp = d.CUmemPoolProps()  # enum members, not ints: bindings 12 take only those
    pp.allocType = d.CUmemAllocationType(alloc_type)
    pp.handleTypes = d.CUmemAllocationHandleType(handle_types)
    pp.location.type = d.CUmemLocationType(location_type)
    pp.location.id = location_id
    pp.maxSize = max_size
    return pp

out["create_refused"] = [name(d.cuMemPoolCreate(props(alloc_type=0))), name(d.cuMemPoolCreate(props(handle_types=1))),
                         name(d.cuMemPoolCreate(props(location_type=2))), name(d.cuMemPoolCreate(props(location_id=5)))]
pool = ck(d.cuMemPoolCreate(props(max_size=1 << 20)))
out["over_max_size"] = name(d.cuMemAllocFromPoolAsync(2 << 20, pool, s))
r = ck(d.cuMemAllocFromPoolAsync(1 << 19, pool, s))
ck(d.cuDeviceSetMemPool(dev, pool))
t = ck(d.cuMemAllocAsync(64, s))
out["current_pool_used"] = int(ck(d.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, t))) == int(pool)
out["own_access"] = int(ck(d.cuMemPoolGetAccess(pool, loc)))
out["destroy_with_live"] = name(d.cuMemPoolDestroy(pool))
out["current_back_to_default"] = int(ck(d.cuDeviceGetMemPool(dev))) == int(default)
out["alloc_from_destroyed"] = name(d.cuMemAllocFromPoolAsync(64, pool, s))
out["free_into_destroyed"] = [name(d.cuMemFreeAsync(r, s)), name(d.cuMemFree(t))]
ck(d.cuStreamSynchronize(s))
out["destroyed_released"] = name(d.cuMemPoolGetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
# a kernel touching pool memory after its free ran faults (sticky ILLEGAL_ADDRESS)
u = ck(d.cuMemAllocAsync(256, s))
ck(d.cuMemFreeAsync(u, s))
ck(d.cuStreamSynchronize(s))
module = ck(d.cuModuleLoadData((KERNELS / "foo.cubin").read_bytes()))
foo = ck(d.cuModuleGetFunction(module, b"foo"))
arg = ctypes.c_uint64(int(u))
params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
ck(d.cuLaunchKernel(foo, 1, 1, 1, 64, 1, 1, 0, s, ctypes.addressof(params), 0))
out["kernel_after_free"] = name(d.cuStreamSynchronize(s))
emit(out)
"""
)


def test_stream_ordered_pools(run_child: Any, child_env: Any, kernels: Any) -> None:
    """cuMemAllocAsync takes the device's current pool; cuMemFreeAsync frees when the stream gets
    there (memory readable before, refused or faulting after; a second free refused); the
    release threshold keeps freed memory reserved until trimmed; pools bound by maxSize, destroyed
    with live allocations (released later), never the default pool."""
    out = run_child(_POOLS, child_env(kernels=kernels)).result
    assert out["current_is_default"] is True
    assert out["location_form"] is True if hasattr(driver, "cuMemGetMemPool") else "location_form" not in out
    assert out["pool_of_pointer"] is True and out["used"] == 4096
    assert_results(
        out,
        CUDA_SUCCESS=["free_async", "read_before_free_ran"],
        CUDA_ERROR_INVALID_VALUE=["free_async_twice", "free_while_pending", "read_after_free_ran", "free_after_free_ran"],
    )
    assert out["after_free"] == [0, 0, 4096]
    assert out["kept"] == [0, 8192] and out["trimmed"] == 0
    assert out["set_read_only"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["set_high_nonzero"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["high_reset"] == 0
    assert out["destroy_default"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["create_refused"] == [
        "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_INVALID_DEVICE",
    ]  # fmt: skip
    assert out["over_max_size"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert out["current_pool_used"] is True and out["own_access"] == 3
    assert out["destroy_with_live"] == "CUDA_SUCCESS" and out["current_back_to_default"] is True
    assert out["alloc_from_destroyed"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["free_into_destroyed"] == ["CUDA_SUCCESS", "CUDA_SUCCESS"]
    assert out["destroyed_released"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["kernel_after_free"] == "CUDA_ERROR_ILLEGAL_ADDRESS"


_POOL_ORDER = (
    RAW_PRELUDE
    + r"""
out = {}
dev, ctx = setup(0)
a, b = ck(d.cuStreamCreate(1)), ck(d.cuStreamCreate(1))  # non-blocking: nothing orders them but events
host = (ctypes.c_uint8 * 64)()
# ordered: b waits for an event recorded on a after the allocation, so b's fill comes after it
gate = threading.Event()
ck(d.cuLaunchHostFunc(a, host_fn(lambda: gate.wait(30)), 0))
p = ck(d.cuMemAllocAsync(64, a))
out["own_stream_before_reached"] = name(d.cuMemsetD8Async(p, 9, 8, a))  # the allocating stream may use it at once
event = ck(d.cuEventCreate(0))
ck(d.cuEventRecord(event, a))
ck(d.cuStreamWaitEvent(b, event, 0))
ck(d.cuMemsetD8Async(int(p) + 8, 7, 56, b))
gate.set()
out["ordered"] = [name(d.cuStreamSynchronize(b)), name(d.cuStreamSynchronize(a))]
ck(d.cuMemcpyDtoH(ctypes.addressof(host), p, 64))
out["data"] = list(host[:9])
ck(d.cuMemFreeAsync(p, a))
ck(d.cuStreamSynchronize(a))
# unordered: b fills an allocation its stream a has not reached (a is held): the device faults
gate2 = threading.Event()
ck(d.cuLaunchHostFunc(a, host_fn(lambda: gate2.wait(30)), 0))
q = ck(d.cuMemAllocAsync(64, a))
ck(d.cuMemsetD8Async(q, 1, 64, b))
out["unordered"] = name(d.cuStreamSynchronize(b))
gate2.set()
out["sticky"] = name(d.cuStreamSynchronize(a))
emit(out)
"""
)


def test_stream_ordered_allocations_are_used_in_stream_order(run_child: Any, child_env: Any, simulator: Any) -> None:
    """CUDA Programming Guide, Stream Ordered Memory Allocator: a cuMemAllocAsync allocation may be
    used by its own stream at once and by another stream ordered after the allocation (an event);
    a copy or fill on another stream that runs before the allocating stream reached it faults."""
    if simulator is None:
        pytest.skip("the fault is the simulator's model of undefined behaviour")
    out = run_child(_POOL_ORDER, child_env()).result
    assert out["own_stream_before_reached"] == "CUDA_SUCCESS"
    assert out["ordered"] == ["CUDA_SUCCESS", "CUDA_SUCCESS"]
    assert out["data"] == [9] * 8 + [7]
    assert out["unordered"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert out["sticky"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
