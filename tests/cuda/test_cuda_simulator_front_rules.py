"""The CUDA front's documented driver rules, shown with raw cuda.bindings calls in child processes
(no offload): the launch buffer's exact extent, streams and events owned by their context, PTX
JIT checks with the JIT's error log, stream callbacks after a fault, a prohibited compute mode,
streams and events never destroyed (copies: test_cuda_simulator_copy_rules.py).
tests/simulators/README.md cites the documentation of each."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import RAW_PRELUDE, assert_results, raw_child

pytestmark = pytest.mark.usefixtures("simulated")


_LAUNCH = raw_child(
    r"""
module, fault = fault_kernel()
out_mem = ck(d.cuMemAlloc(64))
params = [tuple(int(v) for v in ck(d.cuFuncGetParamInfo(fault, i))) for i in range(3)]

def launch_extra(size):
    buf = ctypes.create_string_buffer(32)
    ctypes.memmove(buf, ctypes.byref(ctypes.c_uint64(int(out_mem))), 8)
    ctypes.memmove(ctypes.addressof(buf) + 8, ctypes.byref(ctypes.c_uint32(16)), 4)
    ctypes.memmove(ctypes.addressof(buf) + 12, ctypes.byref(ctypes.c_uint32(1000)), 4)  # no block traps
    n = ctypes.c_size_t(size)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(n), 0)
    rc = name(d.cuLaunchKernel(fault, 1, 1, 1, 16, 1, 1, 0, 0, 0, ctypes.addressof(extra)))
    ck(d.cuCtxSynchronize())
    return rc

emit({"params": params, "exact": launch_extra(16), "short": launch_extra(12), "tail_padded": launch_extra(24)})
"""
)


def test_launch_buffer_must_be_the_parameters_extent(run_child: Any, child_env: Any, kernels: Any) -> None:
    """`fault(unsigned *, unsigned, unsigned)`: parameters end at byte 16. A buffer of exactly 16
    launches; 12 is INVALID_VALUE; 24 (a struct padded to 8-byte alignment) is
    LAUNCH_OUT_OF_RESOURCES, as the real driver answers (llvm-project #143323 / #172249)."""
    out = run_child(_LAUNCH, child_env(kernels=kernels)).result
    assert out["params"] == [[0, 8], [8, 4], [12, 4]]
    assert_results(
        out, CUDA_SUCCESS=["exact"], CUDA_ERROR_INVALID_VALUE=["short"], CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES=["tail_padded"]
    )


_CONTEXTS = (
    RAW_PRELUDE
    + r"""
d0, ctx0 = setup(0)
stream0 = ck(d.cuStreamCreate(1))
event0 = ck(d.cuEventCreate(0))
mem0 = ck(d.cuMemAlloc(64))
pinned = ck(d.cuMemAllocHost(64))
d1 = ck(d.cuDeviceGet(1))
ctx1 = ck(d.cuDevicePrimaryCtxRetain(d1))
ck(d.cuCtxSetCurrent(ctx1))
stream1 = ck(d.cuStreamCreate(1))
event1 = ck(d.cuEventCreate(0))
module, fault = fault_kernel()
mem1 = ck(d.cuMemAlloc(64))
args = [ctypes.c_uint64(int(mem1)), ctypes.c_uint32(16), ctypes.c_uint32(1000)]
params = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
out = {
    "launch_on_own_stream": name(d.cuLaunchKernel(fault, 1, 1, 1, 16, 1, 1, 0, stream1, ctypes.addressof(params), 0)),
    "launch_on_other_contexts_stream": name(d.cuLaunchKernel(fault, 1, 1, 1, 16, 1, 1, 0, stream0, ctypes.addressof(params), 0)),
    "record_event_on_other_contexts_stream": name(d.cuEventRecord(event1, stream0)),
    "record_other_contexts_event": name(d.cuEventRecord(event0, 0)),
    "copy_on_other_contexts_stream": name(d.cuMemcpyDtoHAsync(int(pinned), mem0, 64, stream0)),
    "wait_on_other_contexts_event": name(d.cuStreamWaitEvent(stream1, event0, 0)),
    "sync_other_contexts_event": name(d.cuEventSynchronize(event0)),
}
ck(d.cuEventRecord(event1, stream1))
ck(d.cuCtxSetCurrent(ctx0))
ck(d.cuEventRecord(event0, stream0))
ck(d.cuEventSynchronize(event0)); ck(d.cuEventSynchronize(event1))
out["elapsed_across_contexts"] = name(d.cuEventElapsedTime(event0, event1))
# a stream dies with its context: release the primary context to zero, retain it again
ck(d.cuStreamSynchronize(stream0))
ck(d.cuMemFree(mem0))
ck(d.cuMemFreeHost(pinned))
ck(d.cuDevicePrimaryCtxRelease(d0))
ctx0 = ck(d.cuDevicePrimaryCtxRetain(d0))
ck(d.cuCtxSetCurrent(ctx0))
out["stream_after_its_context_ended"] = name(d.cuStreamQuery(stream0))
out["event_after_its_context_ended"] = name(d.cuEventQuery(event0))
emit(out)
"""
)


def test_streams_and_events_belong_to_their_context(run_child: Any, child_env: Any, kernels: Any) -> None:
    """Programming Guide, "Stream and Event Behavior" / cuEventRecord: a launch on another device's
    stream fails, recording an event on another context's stream fails (INVALID_HANDLE), elapsed
    time across devices fails; copies on another device's stream, waits and syncs on its events
    work. A stream or event whose context has ended is an invalid handle."""
    out = run_child(_CONTEXTS, child_env(devices=2, kernels=kernels)).result
    assert out == {
        "launch_on_own_stream": "CUDA_SUCCESS",
        "launch_on_other_contexts_stream": "CUDA_ERROR_INVALID_HANDLE",
        "record_event_on_other_contexts_stream": "CUDA_ERROR_INVALID_HANDLE",
        "record_other_contexts_event": "CUDA_ERROR_INVALID_HANDLE",
        "copy_on_other_contexts_stream": "CUDA_SUCCESS",
        "wait_on_other_contexts_event": "CUDA_SUCCESS",
        "sync_other_contexts_event": "CUDA_SUCCESS",
        "elapsed_across_contexts": "CUDA_ERROR_INVALID_HANDLE",
        "stream_after_its_context_ended": "CUDA_ERROR_INVALID_HANDLE",
        "event_after_its_context_ended": "CUDA_ERROR_INVALID_HANDLE",
    }


_PTX = raw_child(
    r"""
ptx = (KERNELS / "saxpy.ptx").read_bytes()
assert b".version 9.0" in ptx and b".target sm_90\n" in ptx

def load(text):
    log = bytearray(512)
    opts = [d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    rc = d.cuModuleLoadDataEx(text + b"\0", 2, opts, [log, len(log)])[0]
    return [name(rc), bytes(log).split(b"\0", 1)[0].decode()]

emit({
    "plain": load(ptx),
    "newer_isa": load(ptx.replace(b".version 9.0", b".version 9.1")),
    "arch_specific": load(ptx.replace(b".target sm_90\n", b".target sm_90a\n")),
    "family_specific": load(ptx.replace(b".target sm_90\n", b".target sm_90f\n")),
    "older_target": load(ptx.replace(b".target sm_90\n", b".target sm_80\n")),
    "newer_target": load(ptx.replace(b".target sm_90\n", b".target sm_100\n")),
})
"""
)


@pytest.mark.parametrize("sm", [90, 100])
def test_ptx_jit_checks_with_the_error_log(run_child: Any, child_env: Any, kernels: Any, sm: int) -> None:
    """PTX ISA 9.0 is the newest a 13.0 driver's JIT reads (9.1 is UNSUPPORTED_PTX_VERSION);
    sm_90a code loads only on exactly sm_90, sm_90f on the sm_9x family, plain sm_XX on XX and
    newer; a failed load writes the JIT's reason to CU_JIT_ERROR_LOG_BUFFER."""
    out = run_child(_PTX, child_env(kernels=kernels, GPUSIM_CUDA_SM=str(sm))).result
    assert out["plain"] == ["CUDA_SUCCESS", ""]
    assert out["newer_isa"][0] == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert "Unsupported .version 9.1; current version is '9.0'" in out["newer_isa"][1]
    assert out["older_target"] == ["CUDA_SUCCESS", ""]
    if sm == 90:
        assert out["arch_specific"] == ["CUDA_SUCCESS", ""] and out["family_specific"] == ["CUDA_SUCCESS", ""]
        assert out["newer_target"][0] == "CUDA_ERROR_INVALID_PTX" and "sm_100" in out["newer_target"][1]
    else:
        for key in ("arch_specific", "family_specific"):
            assert out[key][0] == "CUDA_ERROR_INVALID_PTX", key
            assert f"'.target sm_90{key[0]}'" in out[key][1] and "(sm_100)" in out[key][1]
        assert out["newer_target"] == ["CUDA_SUCCESS", ""]


_CALLBACK = raw_child(
    r"""
module, fault = fault_kernel()
mem = ck(d.cuMemAlloc(256))
stream = ck(d.cuStreamCreate(1))
seen = []
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
def callback(_stream, status, _data):
    seen.append([name(status), name(d.cuCtxGetCurrent())])
cb = CALLBACK(callback)
fn = d.CUstreamCallback(ctypes.cast(cb, ctypes.c_void_p).value)
ck(d.cuStreamAddCallback(stream, fn, 0, 0))
ck(d.cuStreamSynchronize(stream))
args = [ctypes.c_uint64(int(mem)), ctypes.c_uint32(64), ctypes.c_uint32(0)]
params = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
ck(d.cuLaunchKernel(fault, 2, 1, 1, 32, 1, 1, 0, stream, ctypes.addressof(params), 0))
added = name(d.cuStreamAddCallback(stream, fn, 0, 0))
synced = name(d.cuStreamSynchronize(stream))
emit({"seen": seen, "added": added, "synced": synced})
"""
)


def test_stream_callbacks_get_the_status_and_may_not_call_the_driver(
    run_child: Any, child_env: Any, kernels: Any
) -> None:
    """cuStreamAddCallback: the callback receives CUDA_SUCCESS or the stream's error (it still runs
    after a fault, unlike cuLaunchHostFunc's function); a driver call inside it is NOT_PERMITTED."""
    out = run_child(_CALLBACK, child_env(kernels=kernels, delay_us=20000)).result
    assert out["seen"][0] == ["CUDA_SUCCESS", "CUDA_ERROR_NOT_PERMITTED"]
    assert out["synced"] == "CUDA_ERROR_ILLEGAL_INSTRUCTION"
    if out["added"] == "CUDA_SUCCESS":  # enqueued before the fault surfaced
        assert out["seen"][1] == ["CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_NOT_PERMITTED"]
    else:
        assert out["added"] == "CUDA_ERROR_ILLEGAL_INSTRUCTION" and len(out["seen"]) == 1


_COMPUTE_MODE = (
    RAW_PRELUDE
    + r"""
ck(d.cuInit(0))
mode = lambda i: int(ck(d.cuDeviceGetAttribute(d.CUdevice_attribute(20), ck(d.cuDeviceGet(i)))))
out = {"modes": [mode(i) for i in range(3)]}
out["retain_prohibited"] = name(d.cuDevicePrimaryCtxRetain(ck(d.cuDeviceGet(1))))
out["state_prohibited"] = [int(v) for v in ck(d.cuDevicePrimaryCtxGetState(ck(d.cuDeviceGet(1))))]
ctx0 = ck(d.cuDevicePrimaryCtxRetain(ck(d.cuDeviceGet(0))))
out["retain_default"] = "CUDA_SUCCESS"
ck(d.cuDevicePrimaryCtxRelease(ck(d.cuDeviceGet(0))))
emit(out)
"""
)


def test_a_prohibited_device_refuses_its_primary_context(run_child: Any, child_env: Any) -> None:
    """cuDevicePrimaryCtxRetain: "Retaining the primary context for the first time will fail with
    CUDA_ERROR_UNKNOWN if the compute mode of the device is CU_COMPUTEMODE_PROHIBITED"; the mode
    is CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (20). GPUSIM_COMPUTE_MODE sets it per ordinal."""
    out = run_child(_COMPUTE_MODE, child_env(devices=3, GPUSIM_COMPUTE_MODE="0,2,3")).result
    assert out["modes"] == [0, 2, 3]
    assert out["retain_prohibited"] == "CUDA_ERROR_UNKNOWN"
    assert out["state_prohibited"][1] == 0  # not active: the refused retain took no reference
    assert out["retain_default"] == "CUDA_SUCCESS"


_LEAKED_HANDLES = raw_child(
    r"""
streams = [ck(d.cuStreamCreate(1)) for _ in range(3)]
events = [ck(d.cuEventCreate(0)) for _ in range(4)]
ck(d.cuStreamDestroy(streams.pop()))
ck(d.cuEventDestroy(events.pop()))
ck(d.cuDevicePrimaryCtxRelease(dev))  # the last reference: the context is reset
# the reset destroyed them: using one is an invalid handle
out = {"stale_event": name(d.cuEventDestroy(events[0])), "stale_stream": name(d.cuStreamDestroy(streams[0]))}
emit(out)
"""
)


def test_streams_and_events_never_destroyed_are_reported_at_the_reset(run_child: Any, child_env: Any) -> None:
    """cuDevicePrimaryCtxRelease: "The context is automatically reset once the last reference to
    it is released" (cuDevicePrimaryCtxReset: "Destroy all allocations and reset all state"). The
    simulator destroys the context's streams and events there and reports the ones never
    destroyed, as it reports leaked allocations."""
    child = run_child(_LEAKED_HANDLES, child_env())
    assert child.result == {"stale_event": "CUDA_ERROR_INVALID_HANDLE", "stale_stream": "CUDA_ERROR_INVALID_HANDLE"}
    assert "gpusim: leak at primary context release of device 0: 2 stream(s) never destroyed" in child.stderr
    assert "gpusim: leak at primary context release of device 0: 3 event(s) never destroyed" in child.stderr
