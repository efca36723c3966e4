"""The CUDA front's documented driver rules, shown with raw cuda.bindings calls in child processes
(no offload): the launch buffer's exact extent, "API synchronization behavior" of synchronous
copies and memsets, legacy vs non-blocking stream ordering, streams and events owned by their
context, peer access that is absent or fails, PTX JIT checks with the JIT's error log, stream
callbacks after a fault. tests/simulators/README.md cites the documentation of each."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import RAW_PRELUDE, raw_child

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
    assert out["exact"] == "CUDA_SUCCESS"
    assert out["short"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["tail_padded"] == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"


_SYNC = raw_child(
    r"""
N = 1 << 16
device = ck(d.cuMemAlloc(N))
device2 = ck(d.cuMemAlloc(N))
pinned = ck(d.cuMemAllocHost(N))
managed = ck(d.cuMemAllocManaged(N, 1))
pageable = ctypes.create_string_buffer(N)
registered = ctypes.create_string_buffer(N)
ck(d.cuMemHostRegister(ctypes.addressof(registered), N, 0))
pageable2 = ctypes.create_string_buffer(N)
P, R = ctypes.addressof(pageable), ctypes.addressof(registered)

def early(call):
    # True when the call returned before its work was done: GPUSIM_DELAY_US holds every stream
    # operation back, so work still queued on the legacy stream right after the call means the
    # call did not wait for it. A call that waits can never look early; one that returns early
    # looks synchronous only if this process stalls longer than the delay before the query, so
    # up to three tries (no test-machine stall makes a synchronous call pass for an early one).
    for _ in range(3):
        ck(call())
        pending = name(d.cuStreamQuery(0)) == "CUDA_ERROR_NOT_READY"
        ck(d.cuCtxSynchronize())
        if pending:
            return True
    return False

out = {
    "HtoD_pageable": early(lambda: d.cuMemcpyHtoD(device, P, N)),
    "HtoD_pinned": early(lambda: d.cuMemcpyHtoD(device, int(pinned), N)),
    "HtoD_registered": early(lambda: d.cuMemcpyHtoD(device, R, N)),
    "HtoD_pageable_to_managed": early(lambda: d.cuMemcpyHtoD(managed, P, N)),
    "DtoH_pageable": early(lambda: d.cuMemcpyDtoH(P, device, N)),
    "DtoH_pinned": early(lambda: d.cuMemcpyDtoH(int(pinned), device, N)),
    "DtoD": early(lambda: d.cuMemcpyDtoD(device2, device, N)),
    "DtoD_managed": early(lambda: d.cuMemcpyDtoD(managed, device, N)),
    "unified_host_to_host": early(lambda: d.cuMemcpy(ctypes.addressof(pageable2), P, N)),
    "memset_device": early(lambda: d.cuMemsetD32(device, 7, N // 4)),
    "memset_pinned": early(lambda: d.cuMemsetD32(int(pinned), 7, N // 4)),
    "memset_managed": early(lambda: d.cuMemsetD32(managed, 7, N // 4)),
}
# and the data is right once synchronised: the memset, then copies of it
ck(d.cuMemsetD8(device, 0x3C, N))
ck(d.cuMemcpyDtoD(device2, device, N))
ck(d.cuMemcpyDtoH(P, device2, N))
out["data"] = pageable.raw == b"\x3c" * N
emit(out)
"""
)


def test_synchronous_copies_and_memsets_return_as_documented(run_child: Any, child_env: Any) -> None:
    """"API synchronization behavior": a copy from pageable memory returns once staged, from
    pinned memory when done; copies to the host return when done; device-to-device copies and
    memsets of device memory do not synchronise the host; memsets of pinned or managed memory
    are synchronous; host to host is synchronous."""
    out = run_child(_SYNC, child_env(delay_us=300000), timeout=300).result
    assert out.pop("data") is True
    returned_early = {key for key, value in out.items() if value}
    assert returned_early == {"HtoD_pageable", "HtoD_pageable_to_managed", "DtoD", "DtoD_managed", "memset_device"}


_ORDERING = raw_child(
    r"""
N = 1 << 16
device = ck(d.cuMemAlloc(N))  # the driver leaves it 0xA5 bytes
pinned = ck(d.cuMemAllocHost(16))
gate = threading.Event()
result = {}
for flags, label in ((1, "non_blocking"), (0, "blocking")):
    stream = ck(d.cuStreamCreate(flags))
    gate.clear()
    ck(d.cuLaunchHostFunc(0, host_fn(lambda: gate.wait(120)), 0))  # holds the legacy stream
    ck(d.cuMemsetD8(device, 0x11 if flags else 0x22, N))  # returns at once (device memory), queued behind
    ck(d.cuMemcpyDtoHAsync(int(pinned), int(device) + N - 16, 16, stream))
    ck(d.cuEventRecord(done := ck(d.cuEventCreate(0)), stream))
    if flags:
        ck(d.cuEventSynchronize(done))  # completes although the legacy stream is still held
        result[label] = [name(d.cuStreamQuery(0)), ctypes.string_at(int(pinned), 16).hex()]
        gate.set()
    else:
        result[label] = [name(d.cuEventQuery(done))]  # waits for the held legacy stream
        gate.set()
        ck(d.cuEventSynchronize(done))
        result[label].append(ctypes.string_at(int(pinned), 16).hex())
    ck(d.cuCtxSynchronize())
emit(result)
"""
)


def test_non_blocking_streams_do_not_order_against_the_legacy_stream(run_child: Any, child_env: Any) -> None:
    """"Stream synchronization behavior": work on a CU_STREAM_NON_BLOCKING stream does not wait for
    the legacy default stream (it reads the memory before the memset queued there: the
    allocation's 0xA5 poison); a blocking stream waits for it."""
    out = run_child(_ORDERING, child_env()).result
    assert out["non_blocking"] == ["CUDA_ERROR_NOT_READY", "a5" * 16]
    assert out["blocking"] == ["CUDA_ERROR_NOT_READY", "22" * 16]


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


_PEER = (
    RAW_PRELUDE
    + r"""
d0, ctx0 = setup(0)
d1 = ck(d.cuDeviceGet(1))
ctx1 = ck(d.cuDevicePrimaryCtxRetain(d1))
src = ck(d.cuMemAlloc(64))
ck(d.cuMemsetD8(src, 0x5A, 64))
ck(d.cuCtxSetCurrent(ctx1))
dst = ck(d.cuMemAlloc(64))
ck(d.cuCtxSetCurrent(ctx0))
out = {"can_access": ck(d.cuDeviceCanAccessPeer(d0, d1)), "enable": name(d.cuCtxEnablePeerAccess(ctx1, 0))}
out["copy_peer"] = name(d.cuMemcpyPeer(dst, ctx1, src, ctx0, 64))
host = ctypes.create_string_buffer(64)
ck(d.cuCtxSetCurrent(ctx1))
ck(d.cuMemcpyDtoH(ctypes.addressof(host), dst, 64))
out["copied"] = host.raw == b"\x5a" * 64
emit(out)
"""
)


@pytest.mark.parametrize(
    ("mode", "can_access", "enable"),
    [("ok", 1, "CUDA_SUCCESS"), ("none", 0, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"), ("fail", 1, "CUDA_ERROR_TOO_MANY_PEERS")],
)
def test_peer_access_may_be_absent_or_fail_and_peer_copies_need_none(
    run_child: Any, child_env: Any, mode: str, can_access: int, enable: str
) -> None:
    """GPUSIM_PEER: peer access everywhere, nowhere (cuDeviceCanAccessPeer 0), or reported but
    failing to enable (CUDA_ERROR_TOO_MANY_PEERS); cuMemcpyPeer copies in every case."""
    out = run_child(_PEER, child_env(devices=2, GPUSIM_PEER=mode)).result
    assert out == {"can_access": can_access, "enable": enable, "copy_peer": "CUDA_SUCCESS", "copied": True}


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


_RECT = raw_child(
    r"""
device = ck(d.cuMemAlloc(4096))
host = (ctypes.c_ubyte * 4096)(*[i % 251 for i in range(4096)])
back = (ctypes.c_ubyte * 4096)()
HOST = ctypes.addressof(host)
stream = ck(d.cuStreamCreate(0))

def params(dst, src, width, height, depth, pitch=64, rows=8, **more):
    p = d.CUDA_MEMCPY3D()
    p.srcMemoryType = p.dstMemoryType = d.CUmemorytype.CU_MEMORYTYPE_UNIFIED
    p.srcDevice, p.dstDevice = src, dst
    p.srcPitch = p.dstPitch = pitch
    p.srcHeight = p.dstHeight = rows
    p.WidthInBytes, p.Height, p.Depth = width, height, depth
    for k, v in more.items():
        setattr(p, k, v)
    return p

out = {}
# 3 slices of 5 rows of 16 bytes, host (pitch 64, 8 rows) -> device, async, then back synchronously
out["to_device"] = name(d.cuMemcpy3DAsync(params(int(device), HOST, 16, 5, 3, srcXInBytes=4, srcY=1), stream))
out["back"] = name(d.cuMemcpy3D(params(ctypes.addressof(back), int(device), 16, 5, 3)))  # legacy stream waits
out["copied"] = all(
    back[z * 512 + y * 64 + x] == host[z * 512 + (y + 1) * 64 + 4 + x]
    for z in range(3) for y in range(5) for x in range(16)
)
out["gaps_untouched"] = all(back[z * 512 + y * 64 + x] == 0 for z in range(3) for y in range(5) for x in range(16, 64))
out["pitch_below_width"] = name(d.cuMemcpy3D(params(int(device), HOST, 60, 1, 1, srcXInBytes=8)))
out["height_below_rows"] = name(d.cuMemcpy3D(params(int(device), HOST, 16, 8, 2, dstY=1)))
# the last row of slice 7 would end at 7*512 + 7*64 + 64 = 4096 + 0: inside; slice 8 starts past the allocation
out["last_row_fits"] = name(d.cuMemcpy3D(params(int(device), HOST, 64, 8, 8)))
out["row_past_allocation"] = name(d.cuMemcpy3D(params(int(device), HOST, 64, 8, 9)))
out["array_side"] = name(d.cuMemcpy3D(params(int(device), HOST, 16, 1, 1, srcMemoryType=d.CUmemorytype.CU_MEMORYTYPE_ARRAY)))
out["zero_extent"] = name(d.cuMemcpy3D(params(int(device), HOST, 0, 5, 3)))
emit(out)
"""
)


def test_memcpy3d_checks_every_row_and_runs_in_stream_order(run_child: Any, child_env: Any) -> None:
    """cuMemcpy3D(Async) ("Memory Management", CUDA_MEMCPY3D): a pitched host->device copy on a
    stream, read back by the synchronous call on the legacy stream (ordered after it), copies
    exactly the extent; a pitch below XInBytes + WidthInBytes, a height below Y + Height (more
    than one slice) and a row past the allocation are INVALID_VALUE; arrays are not simulated."""
    out = run_child(_RECT, child_env()).result
    assert out["to_device"] == "CUDA_SUCCESS"
    assert out["back"] == "CUDA_SUCCESS"
    assert out["copied"] and out["gaps_untouched"]
    assert out["pitch_below_width"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["height_below_rows"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["last_row_fits"] == "CUDA_SUCCESS"
    assert out["row_past_allocation"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["array_side"] == "CUDA_ERROR_NOT_SUPPORTED"
    assert out["zero_extent"] == "CUDA_SUCCESS"
