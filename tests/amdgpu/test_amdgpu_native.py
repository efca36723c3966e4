"""The AMDGPU backend's native entry points (offload_native.h, ``offload_amdgpu._native``), called
directly through a ctypes mirror against the simulated HIP runtime, in a child process: a queued
launch that writes memory, copies both ways and between buffers, synchronize and
has_pending_work, and the cases that defer having done nothing (a runtime error, a synchronous
launch, a queue with host functions, a call from a host function, a copy between two devices); a
bindings capsule with another signature leaves the backend on its Python hooks."""

from __future__ import annotations

from typing import Any


from native_child import NATIVE_MIRROR

_PRELUDE = (
    NATIVE_MIRROR
    + r"""
import struct, threading
from pathlib import Path
from offload import AllocType
programs = Path(PROGRAMS)
"""
)

_ENTRY_POINTS = r"""
from offload_amdgpu import AMDGPUBackend
backend = AMDGPUBackend()
gpu, other = backend.init()
ep = entry_points(backend.native_entry_points(gpu))
out = {"abi": [ep.abi_version, ep.struct_size, ctypes.sizeof(EntryPoints)], "reason": backend.native.reason}
word = lambda native: backend.native_word(gpu, native)
dev = word(gpu)
image = backend.load_binary(gpu, (programs / "foo.hsaco").read_bytes())
kernel = backend.get_kernel(gpu, image, "foo")  # kept: its record lives as long as it
foo = word(kernel)
q = backend.create_queue(gpu)
qw = word(q)
buf = backend.mem_alloc(gpu, AllocType.DEVICE, 256)
buf2 = backend.mem_alloc(gpu, AllocType.DEVICE, 256)
host = (ctypes.c_uint32 * 64)()
arg = struct.pack("P", buf)

def fill(value):
    source = (ctypes.c_uint32 * 64)(*([value] * 64))
    backend.data_submit(gpu, buf, ctypes.addressof(source), 256, None)

def read(address=None):
    backend.data_retrieve(gpu, ctypes.addressof(host), buf if address is None else address, 256, None)
    return list(host)

fill(7)
out["launch"] = ep.launch_kernel(dev, qw, foo, arg + b"\0" * 8, 16, dims())  # tail padding: 8 bytes passed
out["sync"] = ep.synchronize(dev, qw)
out["pending_after_sync"] = pending(ep, dev, qw)
out["written"] = read() == list(range(64))
back = (ctypes.c_uint32 * 64)()
out["retrieve_queued"] = ep.data_retrieve(dev, ctypes.addressof(back), buf, 256, qw)
ep.synchronize(dev, qw)
out["retrieved_queued"] = list(back) == list(range(64))
source = (ctypes.c_uint32 * 64)(*range(100, 164))
out["submit_sync"] = ep.data_submit(dev, buf, ctypes.addressof(source), 256, 0)
out["submitted"] = read() == list(range(100, 164))
out["exchange_queued"] = ep.data_exchange(dev, buf, dev, buf2, 256, qw)
ep.synchronize(dev, qw)
out["exchanged"] = read(buf2) == list(range(100, 164))
back2 = (ctypes.c_uint32 * 64)()
out["retrieve_sync"] = ep.data_retrieve(dev, ctypes.addressof(back2), buf2, 256, 0)
out["retrieved_sync"] = list(back2) == list(range(100, 164))

fill(7)
out["runtime_error"] = ep.launch_kernel(dev, qw, foo, arg, 8, dims(1, 4096))
out["synchronous"] = ep.launch_kernel(dev, 0, foo, arg, 8, dims())
out["bad_address"] = ep.data_submit(dev, 16, ctypes.addressof(source), 256, qw)
elsewhere = backend.mem_alloc(other, AllocType.DEVICE, 256)
out["two_devices"] = ep.data_exchange(dev, buf, backend.native_word(other, other), elsewhere, 256, qw)
ep.synchronize(dev, qw)
out["untouched"] = read() == [7] * 64

held = backend.create_queue(gpu)
gate, ran = threading.Event(), {}
def hold():
    ran["in_host_function"] = ep.data_submit(dev, buf, ctypes.addressof(source), 256, word(held))
    gate.wait(30)
backend.enqueue_host_call(gpu, held, hold)
event = backend.create_event(gpu, held)
backend.wait_event(gpu, q, event)
out["held_pending"] = pending(ep, dev, qw)
out["host_queue_sync"] = ep.synchronize(dev, word(held))
out["host_queue_pending"] = pending(ep, dev, word(held))[0]
gate.set()
out["sync_after_gate"] = ep.synchronize(dev, qw)
out["pending_after_gate"] = pending(ep, dev, qw)
backend.synchronize(gpu, held, False)
out["from_host_function"] = ran["in_host_function"]
emit(out)
"""


def test_entry_points_on_the_simulator(hip_build: Any, hip_child: Any) -> None:
    result = hip_child(f"PROGRAMS = {str(hip_build.programs)!r}\n" + _PRELUDE + _ENTRY_POINTS, hip_build.env(GPUSIM_DEVICES="2"))
    assert result["reason"] is None
    abi, size, mirror = result["abi"]
    assert abi == 1 and size == mirror == 56
    # a queued launch writes memory; synchronize waits; copies both ways and between buffers
    for key in ("launch", "sync", "retrieve_queued", "submit_sync", "exchange_queued", "retrieve_sync"):
        assert result[key] == 0, key
    assert result["pending_after_sync"] == [0, 0]
    for key in ("written", "retrieved_queued", "submitted", "exchanged", "retrieved_sync"):
        assert result[key] is True, key
    # defers, nothing done
    for key in ("runtime_error", "synchronous", "bad_address", "two_devices"):
        assert result[key] == 1, key
    assert result["untouched"] is True
    # pending behind another queue's host function; host functions stay with the Python hooks
    assert result["held_pending"] == [0, 1]
    assert result["host_queue_sync"] == 1 and result["host_queue_pending"] == 1
    assert result["from_host_function"] == 1
    assert result["sync_after_gate"] == 0 and result["pending_after_gate"] == [0, 0]


_MISMATCH = r"""
from hip import hip  # binds the real capsules first
import rocm.bindings.cyhip as cyhip
fake_signature(cyhip.__pyx_capi__, "hipStreamQuery", "enum hipError_t (hipStream_t, int)")
from offload_amdgpu import AMDGPUBackend, _native
backend = AMDGPUBackend()
[gpu] = backend.init()
out = {"unavailable": _native.unavailable, "reason": backend.native.reason,
       "capsule": backend.native_entry_points(gpu), "word": backend.native_word(gpu, gpu)}
import offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
dev = next(d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU)
prog = ol.olCreateProgram(dev, (programs / "foo.hsaco").read_bytes())
mem = ol.olMemAlloc(dev, ol.AllocType.MANAGED, 256)
q = ol.olCreateQueue(dev)
ol.olLaunchKernel(q, dev, ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL), struct.pack("P", mem),
                  ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1), 0))
ol.olSyncQueue(q)
out["written"] = list((ctypes.c_uint32 * 64).from_address(mem)) == list(range(64))
ol.olShutDown()
emit(out)
"""


def test_a_signature_mismatch_leaves_the_python_hooks(hip_build: Any, hip_child: Any) -> None:
    result = hip_child(f"PROGRAMS = {str(hip_build.programs)!r}\n" + _PRELUDE + _MISMATCH, hip_build.env())
    assert "hipStreamQuery" in result["unavailable"] and "(hipStream_t, int)" in result["unavailable"]
    assert result["unavailable"] in result["reason"]
    assert result["capsule"] is None and result["word"] is None
    assert result["written"] is True
