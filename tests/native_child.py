"""Child code (source text) of the GPU backends' native entry-point tests: a ctypes mirror of
``offload_native_entry_points`` (core/src/offload/include/offload_native.h), to call a backend's
entry points directly, without the core; and a job of fills through the core (FILLS)."""

import pytest

#: Defines `EntryPoints` (the struct), `entry_points(capsule)` (its contents), `dims(...)` (an
#: offload_launch_dims), `pending(ep, device, queue)` -> (result, *pending), DONE and DEFER, and
#: `fake_signature(capi, name, signature)`: the binding's capsule of `name` replaced by one with
#: another C signature (the same pointer), so a backend's extension imported next refuses it.
NATIVE_MIRROR = r"""
import ctypes

W = ctypes.c_size_t  # offload_native_word: uintptr_t


class Dims(ctypes.Structure):
    _fields_ = [("num_groups", ctypes.c_uint32 * 3), ("group_size", ctypes.c_uint32 * 3),
                ("dyn_shared_memory", ctypes.c_size_t)]


LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Dims))
MOVE = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, ctypes.c_size_t, W)
EXCHANGE = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, W, ctypes.c_size_t, W)
SYNC = ctypes.CFUNCTYPE(ctypes.c_int, W, W)
PENDING = ctypes.CFUNCTYPE(ctypes.c_int, W, W, ctypes.POINTER(ctypes.c_int))
STAMP = ctypes.CFUNCTYPE(ctypes.c_int, W, W, ctypes.POINTER(ctypes.c_uint64))
LAUNCH_STAMPED = ctypes.CFUNCTYPE(ctypes.c_int, W, W, W, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Dims), ctypes.POINTER(ctypes.c_uint64))
FILL = ctypes.CFUNCTYPE(ctypes.c_int, W, W, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, W)


class EntryPoints(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32), ("launch_kernel", LAUNCH),
                ("data_submit", MOVE), ("data_retrieve", MOVE), ("data_exchange", EXCHANGE),
                ("synchronize", SYNC), ("has_pending_work", PENDING), ("stamp", STAMP),
                ("launch_kernel_stamped", LAUNCH_STAMPED), ("data_fill", FILL)]


DONE, DEFER = 0, 1
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_new = ctypes.pythonapi.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_names = []  # a capsule keeps its name's pointer: the bytes stay alive


def entry_points(capsule):
    return EntryPoints.from_address(_get_pointer(capsule, b"offload.native_entry_points"))


def dims(groups=1, size=64, dyn=0):
    return Dims((groups, 1, 1), (size, 1, 1), dyn)


def pending(ep, device, queue):
    flag = ctypes.c_int(-1)
    return ep.has_pending_work(device, queue, ctypes.byref(flag)), flag.value


def fake_signature(capi, name, signature):
    real = capi[name]
    pointer = _get_pointer(real, _get_name(real))
    _names.append(signature.encode())
    capi[name] = _new(pointer, _names[-1], None)
"""

#: The scenario both GPU backends run (after NATIVE_MIRROR; needs `backend`, its devices `gpu` and
#: `other`, and `foo_image`, the bytes of the foo program): a queued launch that writes memory,
#: copies both ways and between buffers, synchronize and has_pending_work, and the cases that defer
#: having done nothing. Leaves `out` (checked by `check_scenario`), `ep`, `word`, `dev`, `q`, `qw`,
#: `buf`, `arg`, `source`, `fill` and `read` for a backend's own cases.
NATIVE_SCENARIO = r"""
import struct, threading
from offload import AllocType

ep = entry_points(backend.native_entry_points(gpu))
out = {"abi": [ep.abi_version, ep.struct_size, ctypes.sizeof(EntryPoints)], "reason": backend.native.reason}
word = lambda native: backend.native_word(gpu, native)
dev = word(gpu)
foo_program = backend.load_binary(gpu, foo_image)
foo_kernel = backend.get_kernel(gpu, foo_program, "foo")  # kept: its record lives as long as it
foo = word(foo_kernel)
q = backend.create_queue(gpu)
qw = word(q)
buf = backend.mem_alloc(gpu, AllocType.DEVICE, 256)
buf2 = backend.mem_alloc(gpu, AllocType.DEVICE, 256)
host = (ctypes.c_uint32 * 64)()
arg = struct.pack("P", buf)


def fill(value):
    values = (ctypes.c_uint32 * 64)(*([value] * 64))
    backend.data_submit(gpu, buf, ctypes.addressof(values), 256, None)


def read(address=None):
    backend.data_retrieve(gpu, ctypes.addressof(host), buf if address is None else address, 256, None)
    return list(host)


# a queued launch writes the buffer; synchronize waits for it; a queued copy brings it back
fill(7)
out["launch"] = ep.launch_kernel(dev, qw, foo, arg + b"\0" * 8, 16, dims())  # tail padding: 8 bytes passed
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
# launch, a bad device address, a copy between two devices
fill(7)
out["driver_error"] = ep.launch_kernel(dev, qw, foo, arg, 8, dims(1, 4096))
out["synchronous"] = ep.launch_kernel(dev, 0, foo, arg, 8, dims())
out["bad_address"] = ep.data_submit(dev, 16, ctypes.addressof(source), 256, qw)
elsewhere = backend.mem_alloc(other, AllocType.DEVICE, 256)
out["two_devices"] = ep.data_exchange(dev, buf, backend.native_word(other, other), elsewhere, 256, qw)
ep.synchronize(dev, qw)
out["untouched"] = read() == [7] * 64

# a queue held behind another queue's host function: pending, then not
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
"""


def check_scenario(result: dict) -> None:
    """The assertions of NATIVE_SCENARIO's results."""
    assert result["reason"] is None
    abi, size, mirror = result["abi"]
    assert abi == 1 and size == mirror == 80  # the struct as offload_native.h has it (stamp, launch_kernel_stamped: the timeline's, optional; data_fill, optional)
    # a queued launch writes memory; synchronize waits; copies both ways and between buffers
    for key in ("launch", "sync", "retrieve_queued", "submit_sync", "exchange_queued", "retrieve_sync"):
        assert result[key] == 0, key
    assert result["pending_after_sync"] == [0, 0]
    for key in ("written", "retrieved_queued", "submitted", "exchanged", "retrieved_sync"):
        assert result[key] is True, key
    # defers, nothing done
    for key in ("driver_error", "synchronous", "bad_address", "two_devices"):
        assert result[key] == 1, key
    assert result["untouched"] is True
    # pending behind another queue's host function; a queue with host functions stays with the
    # Python hooks; no driver call from a host function's thread
    assert result["held_pending"] == [0, 1]
    assert result["host_queue_sync"] == 1 and result["host_queue_pending"] == 1
    assert result["from_host_function"] == 1
    assert result["sync_after_gate"] == 0 and result["pending_after_gate"] == [0, 0]


def mismatch_child(capi_module: str, name: str, signature: str, package: str, backend_class: str) -> str:
    """Child code (after NATIVE_MIRROR, with the bindings' Python module imported: it binds the
    real capsules, checking their signatures too): the capsule of ``name`` replaced by one of
    ``signature``, then ``backend`` of ``package`` initialised (``device``, its first device) and
    ``out`` holding what ``check_mismatch`` reads but ``written``."""
    return f"""
import {capi_module} as capi_module
fake_signature(capi_module.__pyx_capi__, {name!r}, {signature!r})
from {package} import {backend_class}, _native
backend = {backend_class}()
device = backend.init()[0]
out = {{"unavailable": _native.unavailable, "reason": backend.native.reason,
       "capsule": backend.native_entry_points(device), "word": backend.native_word(device, device)}}
"""


def check_mismatch(result: dict, name: str, signature: str) -> None:
    """A child that replaced the capsule of ``name`` by one of ``signature`` before the backend
    imported its extension: no entry points, the reason names both, the Python hooks served."""
    assert name in result["unavailable"] and signature in result["unavailable"], result["unavailable"]
    assert result["unavailable"] in result["reason"]
    assert result["capsule"] is None and result["word"] is None
    assert result["written"] is True


#: Fills through the core's compiled path, on `gpu` (with `host`, the host device; the child defines
#: both and `emit`): each pattern the backend's native memset takes, queued and synchronously, and two
#: it defers to the Python hook; emits the bytes and the calls each path made (olMemFill.counts).
FILLS = r"""
import ctypes
q = ol.olCreateQueue(gpu)
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
ol.olMemFill(q, mem, b"\x00", 64)  # the first: Python, which publishes the allocation's fill verdict
ol.olMemFill(q, mem, b"\x07", 16)  # memset D8
ol.olMemFill(q, mem + 16, b"\x01\x02", 16)  # memset D16
ol.olMemFill(q, mem + 32, b"\x01\x02\x03\xf4", 16)  # memset D32 (a value over INT_MAX: HIP's takes an int)
ol.olMemFill(q, mem + 49, b"\x05\x06", 12)  # a 2-byte pattern at an odd address: the hook's 2-D fill
ol.olMemFill(q, mem + 61, b"\x08", 3)
ol.olSyncQueue(q)  # a synchronous call is not ordered after a queue's work (its stream does not block): finish it first
ol.olMemFill(None, mem + 48, b"\x09", 1)  # synchronous: Python first (its verdict is keyed by no queue)
ol.olMemFill(None, mem + 48, b"\x0a", 1)  # then natively, waited for
ol.olSyncQueue(q)
back = (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, ctypes.addressof(back), host, mem, gpu, 64)
emit({"data": list(back), "fill": getattr(ol.olMemFill, "counts", None)})
"""


def check_fills(result: dict) -> None:
    """FILLS' bytes, the same on either path; where the compiled path ran, 5 fills native, 2 deferred."""
    assert result["data"] == [7] * 16 + [1, 2] * 8 + [1, 2, 3, 0xF4] * 4 + [10] + [5, 6] * 6 + [8] * 3
    if result["fill"] is None:
        pytest.skip("the compiled core is not built here (OFFLOAD_COMPILED=0 or no C compiler)")
    assert result["fill"] == {"fast": 6, "deferred": 2, "native": 5}, result["fill"]
