"""The CUDA front's documented copy rules, shown with raw cuda.bindings calls in child processes
(no offload): "API synchronization behavior" of synchronous copies and memsets, legacy vs
non-blocking stream ordering, peer access that is absent or fails (peer copies need none), and
cuMemcpy3D's checks of every row. tests/simulators/README.md cites the documentation of each."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import RAW_PRELUDE, assert_results, raw_child

pytestmark = pytest.mark.usefixtures("simulated")


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
    assert out["copied"] and out["gaps_untouched"]
    assert_results(
        out,
        CUDA_SUCCESS=["to_device", "back", "last_row_fits", "zero_extent"],
        CUDA_ERROR_INVALID_VALUE=["pitch_below_width", "height_below_rows", "row_past_allocation"],
        CUDA_ERROR_NOT_SUPPORTED=["array_side"],
    )
