"""The CUDA backend's native entry points (offload_native.h, ``offload_cuda._native``), called
directly through a ctypes mirror against the simulated driver, each run in a child process: a
queued launch that writes memory, copies both ways and between buffers, synchronize and
has_pending_work, and every case that defers having done nothing (a driver error, a synchronous
launch, dynamic shared memory beyond the kernel's limit, a queue with host functions, a call from
a host function, a copy between two GPUs); a bindings capsule with another signature leaves the
backend on its Python hooks."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PRELUDE
from native_child import NATIVE_MIRROR

_ENTRY_POINTS = (
    PRELUDE
    + NATIVE_MIRROR
    + r"""
import threading
from offload import AllocType
from offload_cuda import CudaBackend

backend = CudaBackend()
state, other = backend.init()
ep = entry_points(backend.native_entry_points(state))
out = {"abi": [ep.abi_version, ep.struct_size, ctypes.sizeof(EntryPoints)], "reason": backend.native.reason}
word = lambda native: backend.native_word(state, native)
dev = word(state)
programs = {n: backend.load_binary(state, image(n)) for n in ("foo", "localmem", "fault")}
kern = {n: backend.get_kernel(state, p, n) for n, p in programs.items()}
q = backend.create_queue(state)
qw = word(q)
buf = backend.mem_alloc(state, AllocType.DEVICE, 256)
buf2 = backend.mem_alloc(state, AllocType.DEVICE, 256)
host = (ctypes.c_uint32 * 64)()
arg = struct.pack("P", buf)

def fill(value):
    source = (ctypes.c_uint32 * 64)(*([value] * 64))
    backend.data_submit(state, buf, ctypes.addressof(source), 256, None)

def read(address=None):
    backend.data_retrieve(state, ctypes.addressof(host), buf if address is None else address, 256, None)
    return list(host)

# a queued launch writes the buffer; synchronize waits for it; a queued copy brings it back
fill(7)
out["launch"] = ep.launch_kernel(dev, qw, word(kern["foo"]), arg + b"\0" * 8, 16, dims())  # tail padding
out["sync"] = ep.synchronize(dev, qw)
out["pending_after_sync"] = pending(ep, dev, qw)
out["written"] = read() == list(range(64))
back = (ctypes.c_uint32 * 64)()
out["retrieve_queued"] = ep.data_retrieve(dev, ctypes.addressof(back), buf, 256, qw)
ep.synchronize(dev, qw)
out["retrieved_queued"] = list(back) == list(range(64))

# host to device and device to device, synchronous and queued
source = (ctypes.c_uint32 * 64)(*range(100, 164))
out["submit_sync"] = ep.data_submit(dev, buf, ctypes.addressof(source), 256, 0)
out["submitted"] = read() == list(range(100, 164))
out["exchange_queued"] = ep.data_exchange(dev, buf, dev, buf2, 256, qw)
ep.synchronize(dev, qw)
out["exchanged"] = read(buf2) == list(range(100, 164))
back2 = (ctypes.c_uint32 * 64)()
out["retrieve_sync"] = ep.data_retrieve(dev, ctypes.addressof(back2), buf2, 256, 0)
out["retrieved_sync"] = list(back2) == list(range(100, 164))

# defers, nothing done: a block beyond the device's limit (the driver refuses), a synchronous
# launch, dynamic shared memory above what the kernel is set up for, a bad device address
fill(7)
out["driver_error"] = ep.launch_kernel(dev, qw, word(kern["foo"]), arg, 8, dims(1, 4096))
out["synchronous"] = ep.launch_kernel(dev, 0, word(kern["foo"]), arg, 8, dims())
out["too_much_shared"] = ep.launch_kernel(dev, qw, word(kern["localmem"]), arg, 8, dims(1, 64, 1 << 16))
out["bad_address"] = ep.data_submit(dev, 16, ctypes.addressof(source), 256, qw)
elsewhere = backend.mem_alloc(other, AllocType.DEVICE, 256)
out["two_gpus"] = ep.data_exchange(dev, buf, backend.native_word(other, other), elsewhere, 256, qw)
ep.synchronize(dev, qw)
out["untouched"] = read() == [7] * 64
# the Python hook raises the kernel's limit, then the record's: the native launch then serves
backend.launch_kernel(state, q, kern["localmem"], arg, ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1), 1 << 16))
out["shared_after_python"] = ep.launch_kernel(dev, qw, word(kern["localmem"]), arg, 8, dims(1, 64, 1 << 16))
ep.synchronize(dev, qw)

# a queue held behind another queue's host function: pending, then not
held = backend.create_queue(state)
gate, ran = threading.Event(), {}
def hold():
    ran["in_host_function"] = ep.data_submit(dev, buf, ctypes.addressof(source), 256, word(held))
    gate.wait(30)
backend.enqueue_host_call(state, held, hold)
event = backend.create_event(state, held)
backend.wait_event(state, q, event)
out["held_pending"] = pending(ep, dev, qw)
out["host_queue_sync"] = ep.synchronize(dev, word(held))
out["host_queue_pending"] = pending(ep, dev, word(held))
gate.set()
out["sync_after_gate"] = ep.synchronize(dev, qw)
out["pending_after_gate"] = pending(ep, dev, qw)
backend.synchronize(state, held, False)
out["from_host_function"] = ran["in_host_function"]

# a device fault: the launch is queued, the wait fails and defers; the Python hook raises
fault_args = struct.pack("PII", buf, 64, 0)
out["fault_launch"] = ep.launch_kernel(dev, qw, word(kern["fault"]), fault_args, len(fault_args), dims())
out["fault_sync"] = ep.synchronize(dev, qw)
out["fault_python"] = error_of(backend.synchronize, state, q, False)
emit(out)
"""
)


@pytest.fixture(scope="module")
def native(run_child: Any, child_env: Any, kernels: Any) -> dict[str, Any]:
    return run_child(_ENTRY_POINTS, child_env(devices=2, kernels=kernels)).result


def test_entry_points_struct_matches_the_header(native: dict[str, Any]) -> None:
    assert native["reason"] is None
    abi, size, mirror = native["abi"]
    assert abi == 1 and size == mirror == 56


def test_queued_launch_writes_memory_and_synchronize_waits(native: dict[str, Any]) -> None:
    assert native["launch"] == 0 and native["sync"] == 0
    assert native["pending_after_sync"] == [0, 0]
    assert native["written"] is True


def test_copies_both_ways_and_between_buffers(native: dict[str, Any]) -> None:
    for key in ("retrieve_queued", "submit_sync", "exchange_queued", "retrieve_sync"):
        assert native[key] == 0, key
    for key in ("retrieved_queued", "submitted", "exchanged", "retrieved_sync"):
        assert native[key] is True, key


def test_defers_with_nothing_done(native: dict[str, Any]) -> None:
    for key in ("driver_error", "synchronous", "too_much_shared", "bad_address", "two_gpus"):
        assert native[key] == 1, key
    assert native["untouched"] is True
    assert native["shared_after_python"] == 0  # the record follows the kernel's raised limit


def test_pending_work_and_host_functions(native: dict[str, Any]) -> None:
    assert native["held_pending"] == [0, 1]  # behind the other queue's host function
    assert native["host_queue_sync"] == 1 and native["host_queue_pending"][0] == 1  # host functions: Python's
    assert native["from_host_function"] == 1  # no driver call from a host function's thread
    assert native["sync_after_gate"] == 0 and native["pending_after_gate"] == [0, 0]


def test_a_driver_error_in_the_wait_defers_to_the_python_hook(native: dict[str, Any]) -> None:
    assert native["fault_launch"] == 0 and native["fault_sync"] == 1
    code, details = native["fault_python"]
    assert code != "SUCCESS" and "cuStreamSynchronize" in details


_MISMATCH = (
    PRELUDE
    + NATIVE_MIRROR
    + r"""
import cuda.bindings.driver  # binds the real capsules first (it checks their signatures too)
import cuda.bindings.cydriver as cydriver
fake_signature(cydriver.__pyx_capi__, "cuStreamQuery", "CUresult (CUstream, int)")
from offload_cuda import CudaBackend, _native
backend = CudaBackend()
[state] = backend.init()
out = {"unavailable": _native.unavailable, "reason": backend.native.reason,
       "capsule": backend.native_entry_points(state), "word": backend.native_word(state, state)}
# the backend serves through its Python hooks
ol.olInit()
gpu = platform_devices()["cuda"][0]
prog = ol.olCreateProgram(gpu, image("foo"))
mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 256)
q = ol.olCreateQueue(gpu)
ol.olLaunchKernel(q, gpu, ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL), struct.pack("P", mem), launch())
ol.olSyncQueue(q)
out["written"] = u32s(mem, 64) == list(range(64))
ol.olShutDown()
emit(out)
"""
)


def test_a_signature_mismatch_leaves_the_python_hooks(run_child: Any, child_env: Any, kernels: Any) -> None:
    result = run_child(_MISMATCH, child_env(kernels=kernels)).result
    assert "cuStreamQuery" in result["unavailable"] and "CUresult (CUstream, int)" in result["unavailable"]
    assert result["unavailable"] in result["reason"]
    assert result["capsule"] is None and result["word"] is None
    assert result["written"] is True
