"""Stream-ordered memory on HIP (issue 32, part 3): the simulated runtime's hipMallocAsync /
hipFreeAsync with raw hip-python calls (the free runs when the stream reaches it: the memory is
valid until then and gone after; a second free, or hipFree of a pending one, is refused), and
olMemAllocAsync / olMemFreeAsync of the AMDGPU backend over them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RAW = """
import ctypes, threading
from hip import hip
out = {}
err, s = hip.hipStreamCreateWithFlags(1)           # non-blocking: the null stream's copies do not wait for it
err, p = hip.hipMallocAsync(64, s)
out["alloc"] = [int(err), int(p) != 0]
hip.hipStreamSynchronize(s)                         # s reached the allocation: the null stream may use it now
gate = threading.Event()
callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: gate.wait(30))
out["gate"] = int(hip.hipLaunchHostFunc(s, ctypes.cast(callback, ctypes.c_void_p).value, None)[0])
out["free"] = int(hip.hipFreeAsync(p, s)[0])
out["double_free"] = int(hip.hipFreeAsync(p, s)[0])
out["hipFree_pending"] = int(hip.hipFree(p)[0])
buf = (ctypes.c_uint8 * 64)()
out["use_before_the_stream_reaches_it"] = int(hip.hipMemcpyDtoH(buf, p, 64)[0])
gate.set()
hip.hipStreamSynchronize(s)
out["use_after"] = int(hip.hipMemcpyDtoH(buf, p, 64)[0])
err, q = hip.hipMalloc(64)
out["hipMalloc_memory"] = int(hip.hipFreeAsync(q, s)[0])
hip.hipStreamSynchronize(s)
out["null"] = int(hip.hipFreeAsync(None, s)[0])
hip.hipStreamDestroy(s)
emit(out)
"""

FLAT = """
import ctypes
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
gpu = [d for d in found if d.platform.name == "amdgpu"][0]
host = [d for d in found if d.is_host][0]
q = ol.olCreateQueue(gpu)
back = (ctypes.c_uint8 * 4096)()
for i in range(10):
    t = ol.olMemAllocAsync(q, ol.AllocType.DEVICE, 4096)
    ol.olMemFill(q, t, bytes([i + 1]), 4096)
    ol.olMemcpy(q, ctypes.addressof(back), host, t, gpu, 4096)
    ol.olMemFreeAsync(q, t)
try:
    ol.olMemFill(q, t, b"\\0", 4)
    refused = None
except ol.OffloadError as exc:
    refused = exc.code.name
ol.olSyncQueue(q)
left = ol.olMemAllocAsync(q, ol.AllocType.DEVICE, 64)  # given back by the shutdown
ol.olDestroyQueue(q)
ol.olShutDown()
emit([bytes(back) == bytes([10]) * 4096, refused])
"""


def test_hip_stream_ordered_memory_raw(hip_runtime: Path, hip_child: Any) -> None:
    out = hip_child(RAW, {"LD_LIBRARY_PATH": str(hip_runtime)})
    assert out == {
        "alloc": [0, True],
        "gate": 0,
        "free": 0,
        "double_free": 1,  # hipErrorInvalidValue
        "hipFree_pending": 1,
        "use_before_the_stream_reaches_it": 0,
        "use_after": 1,
        "hipMalloc_memory": 0,
        "null": 0,
    }


def test_olmemallocasync_on_amdgpu(hip_runtime: Path, hip_child: Any, tmp_path: Path) -> None:
    env = {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_KERNELS": str(tmp_path), "ROCM_PATH": str(tmp_path / "no-rocm")}
    assert hip_child(FLAT, env) == [True, "INVALID_ARGUMENT"]


ORDER = """
import ctypes, threading
from hip import hip
out = {}
err, a = hip.hipStreamCreateWithFlags(1)
err, b = hip.hipStreamCreateWithFlags(1)
gate = threading.Event()
keep = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: gate.wait(30))
hip.hipLaunchHostFunc(a, ctypes.cast(keep, ctypes.c_void_p).value, None)
err, p = hip.hipMallocAsync(64, a)
err, event = hip.hipEventCreate()
hip.hipEventRecord(event, a)
hip.hipStreamWaitEvent(b, event, 0)
out["ordered_fill"] = int(hip.hipMemsetD8Async(p, 7, 64, b)[0])
gate.set()
out["ordered"] = [int(hip.hipStreamSynchronize(b)[0]), int(hip.hipStreamSynchronize(a)[0])]
gate2 = threading.Event()
keep2 = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: gate2.wait(30))
hip.hipLaunchHostFunc(a, ctypes.cast(keep2, ctypes.c_void_p).value, None)
err, q = hip.hipMallocAsync(64, a)
hip.hipMemsetD8Async(q, 1, 64, b)                 # b is not ordered after the allocation: a is held
out["unordered"] = int(hip.hipStreamSynchronize(b)[0])
gate2.set()
emit(out)
"""


def test_hip_stream_ordered_allocations_are_used_in_stream_order(hip_runtime: Path, hip_child: Any) -> None:
    out = hip_child(ORDER, {"LD_LIBRARY_PATH": str(hip_runtime)})
    assert out == {"ordered_fill": 0, "ordered": [0, 0], "unordered": 700}  # hipErrorIllegalAddress
