"""The AMDGPU backend's own rules, through the simulated HIP runtime (each test in a child process):
argument sizes from the metadata note, binary checks, bundles, fills of every pattern size,
host functions, two devices with peer copies, and streams kept in a pool."""

from __future__ import annotations

from amdgpu_child import DEVICES, programs_prelude
from helpers import ERROR_OF

PRELUDE = (
    """
import ctypes
from pathlib import Path
import offload as ol
programs, other = Path(PROGRAMS), Path(OTHER)
"""
    + DEVICES
    + """
def launch(groups=1, items=64, shared=0):
    return ol.KernelLaunchSizeArgs(dimensions=1, num_groups=ol.Dimensions(groups, 1, 1),
                                   group_size=ol.Dimensions(items, 1, 1), dyn_shared_memory=shared)
"""
    + ERROR_OF
)


def test_argument_sizes_from_the_metadata_note(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
from offload_amdgpu import AMDGPUBackend
out = {}
prog = ol.olCreateProgram(dev, (programs / "multiargs.hsaco").read_bytes())
k = ol.olGetSymbol(prog, "multiargs", ol.SymbolKind.KERNEL)
q = ol.olCreateQueue(dev)
mem = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
class Args(ctypes.Structure):
    _fields_ = [("a", ctypes.c_char), ("b", ctypes.c_void_p), ("c", ctypes.c_short)]
args = bytes(Args(b"x", mem, 7))
out["struct_size"] = len(args)
ol.olLaunchKernel(q, dev, k, args, launch())                   # 24 bytes: the C struct, tail padding
ol.olLaunchKernel(q, dev, k, args[:18], launch())              # exactly the explicit arguments
out["short"] = error_of(ol.olLaunchKernel, q, dev, k, args[:17], launch())
out["none"] = error_of(ol.olLaunchKernel, q, dev, k, None, launch())
noargs_prog = ol.olCreateProgram(dev, (programs / "noargs.hsaco").read_bytes())
noargs = ol.olGetSymbol(noargs_prog, "noargs", ol.SymbolKind.KERNEL)
ol.olLaunchKernel(q, dev, noargs, None, launch())
ol.olSyncQueue(q)
backend = AMDGPUBackend()
[native] = backend.init()
image = backend.load_binary(native, (programs / "multiargs.hsaco").read_bytes())
native_kernel = backend.get_kernel(native, image, "multiargs")
out["params"] = [list(p) for p in backend.kernel_params(native, native_kernel)]
backend.unload_binary(native, image)
ol.olShutDown()
emit(out)
""",
        hip_build.env(),
    )
    assert result["struct_size"] == 24
    # the core refuses first (from kernel_params), naming both sizes
    assert result["short"][0] == "INVALID_ARGUMENT"
    assert "17" in result["short"][1] and "18 bytes" in result["short"][1], result["short"]
    assert result["none"][0] == "INVALID_ARGUMENT" and "18 bytes" in result["none"][1], result["none"]
    # the check is made once, by the core (issue 16): the backend no longer repeats it
    assert result["short"][1].startswith("ArgumentsSize 17 is shorter than the 18 bytes"), result["short"]
    # HIP metadata has no type names: no element types (None, not const)
    assert result["params"] == [[0, 1, "bytes", "", None, False], [8, 8, "pointer", "", None, False], [16, 2, "bytes", "", None, False]]


def test_binary_checks(hip_build, foo_bundle, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + f"""
import struct
bundle = Path({str(foo_bundle)!r}).read_bytes()
right = (programs / "foo.hsaco").read_bytes()
wrong = (other / "foo.hsaco").read_bytes()
cubin = bytearray(right); cubin[18:20] = struct.pack("<H", 190)
valid = {{name: ol.olIsValidBinary(dev, data) for name, data in
         [("right", right), ("wrong", wrong), ("bundle", bundle), ("cubin", bytes(cubin)),
          ("garbage", b"garbage" * 9)]}}
errors = {{name: error_of(ol.olCreateProgram, dev, data) for name, data in
          [("wrong", wrong), ("cubin", bytes(cubin)), ("garbage", b"garbage" * 9)]}}
prog = ol.olCreateProgram(dev, bundle)                          # the gfx90a entry of the bundle runs
k = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
out = ol.olMemAlloc(dev, ol.AllocType.MANAGED, 256)
ol.olLaunchKernel(None, dev, k, bytes(ctypes.c_void_p(out)), launch())
values = list((ctypes.c_uint32 * 64).from_address(out))
missing = error_of(ol.olGetSymbol, prog, "bar", ol.SymbolKind.KERNEL)
ol.olShutDown()
emit({{"valid": valid, "errors": errors, "values": values, "missing": missing}})
""",
        hip_build.env(),
    )
    assert result["valid"] == {"right": True, "wrong": False, "bundle": True, "cubin": False, "garbage": False}
    code, details = result["errors"]["wrong"]
    assert code == "INVALID_BINARY" and "built for gfx1030 but the device is gfx90a:sramecc+:xnack-" in details
    assert result["errors"]["cubin"][0] == "INVALID_BINARY" and "CUDA cubin" in result["errors"]["cubin"][1]
    assert result["errors"]["garbage"][0] == "INVALID_BINARY"
    assert result["values"] == list(range(64))
    assert result["missing"][0] == "NOT_FOUND"


def test_fills_of_every_pattern_size(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
import os
out = {}
q = ol.olCreateQueue(dev)
for width in (1, 2, 3, 4, 5, 8, 12, 16):
    pattern = bytes(range(0xF0, 0xF0 + width))
    size = width * 40
    mem = ol.olMemAlloc(dev, ol.AllocType.MANAGED, size + 8)
    ctypes.memset(mem, 0xAA, size + 8)
    ol.olMemFill(q, mem, pattern, size)
    ol.olSyncQueue(q)
    data = ctypes.string_at(mem, size + 8)
    out[width] = data[:size] == pattern * 40 and data[size:] == b"\\xaa" * 8
    ol.olMemFree(mem)
ol.olShutDown()
emit(out)
""",
        hip_build.env(GPUSIM_DELAY_US="200"),
    )
    assert all(result.values()) and len(result) == 8, result


def test_host_function_errors_and_stream_pool(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
from hip import hip
out = {}
seen = []
q = ol.olCreateQueue(dev)
ol.olLaunchHostFunction(q, lambda _: seen.append(1))
def boom(_):
    raise ValueError("from the host function")
ol.olLaunchHostFunction(q, boom)
out["sync"] = error_of(ol.olSyncQueue, q)
out["again"] = error_of(ol.olSyncQueue, q)         # reported once
out["seen"] = seen
ol.olDestroyQueue(q)
queues = [ol.olCreateQueue(dev) for _ in range(4)]
for queue in queues:
    ol.olDestroyQueue(queue)
ol.olShutDown()
emit(out)
""",
        hip_build.env(),
    )
    code, details = result["sync"]
    assert code == "UNKNOWN" and "ValueError: from the host function" in details
    assert result["again"] is None and result["seen"] == [1]


def test_two_devices_peer_copy(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
a, b = amd
src = ol.olMemAlloc(a, ol.AllocType.DEVICE, 256)
dst = ol.olMemAlloc(b, ol.AllocType.DEVICE, 256)
payload = bytes(range(256))
buf = ctypes.create_string_buffer(payload, 256)
ol.olMemcpy(None, src, a, ctypes.addressof(buf), host, 256)
q = ol.olCreateQueue(a)
ol.olMemcpy(q, dst, b, src, a, 256)             # peer copy (hipMemcpyPeerAsync)
ol.olSyncQueue(q)
back = ctypes.create_string_buffer(256)
ol.olMemcpy(None, ctypes.addressof(back), host, dst, b, 256)
prog = ol.olCreateProgram(b, (programs / "foo.hsaco").read_bytes())
k = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
qb = ol.olCreateQueue(b)
out_mem = ol.olMemAlloc(b, ol.AllocType.MANAGED, 256)
ol.olLaunchKernel(qb, b, k, bytes(ctypes.c_void_p(out_mem)), launch())
ol.olSyncQueue(qb)
queued = list((ctypes.c_uint32 * 64).from_address(out_mem)) == list(range(64))
ctypes.memset(out_mem, 0, 256)
ol.olMemAlloc(a, ol.AllocType.DEVICE, 64)                                    # device 0 is current now
ol.olLaunchKernel(None, b, k, bytes(ctypes.c_void_p(out_mem)), launch())   # synchronous, on device 1
sync = list((ctypes.c_uint32 * 64).from_address(out_mem)) == list(range(64))
emit({"devices": len(amd), "copied": back.raw == payload, "kernel": queued and sync})
""",
        hip_build.env(GPUSIM_DEVICES="2"),
    )
    assert result == {"devices": 2, "copied": True, "kernel": True}


def test_launches_from_many_threads_keep_their_arguments(hip_build, hip_child) -> None:
    """Each thread packs its arguments into its own launch block: no launch sees another's."""
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
import struct, threading
prog = ol.olCreateProgram(dev, (programs / "single_counter.hsaco").read_bytes())
k = ol.olGetSymbol(prog, "single_counter", ol.SymbolKind.KERNEL)
init = ol.olMemAlloc(dev, ol.AllocType.MANAGED, 4)
ctypes.c_uint32.from_address(init).value = 1000
bad = []
def worker(tid):
    q = ol.olCreateQueue(dev)
    outs = [ol.olMemAlloc(dev, ol.AllocType.MANAGED, 4) for _ in range(40)]
    for i, out in enumerate(outs):
        ol.olLaunchKernel(q, dev, k, struct.pack("<iiQQ", i, tid + 1, init, out), launch(1, 1))
    ol.olSyncQueue(q)
    for i, out in enumerate(outs):
        if ctypes.c_uint32.from_address(out).value != 1000 + i * (tid + 1):
            bad.append((tid, i))
    ol.olDestroyQueue(q)
threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
for t in threads: t.start()
for t in threads: t.join()
ol.olShutDown()
emit(bad)
""",
        hip_build.env(),
    )
    assert result == []
