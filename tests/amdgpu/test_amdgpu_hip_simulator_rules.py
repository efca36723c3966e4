"""The simulated HIP runtime's strict rules, through raw hip-python calls (no offload), each in a
child process: what tests/simulators/hip/README.md lists under "strict rules", one test per rule.

Each of these passed on the lenient simulator that came before (a test that cannot fail there
would not show the rule): HIP calls from a host function, peer access that is absent or fails,
the device pointer of registered host memory, fill alignment, sticky faults, module / device
mismatches, the push buffer, events left alive.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import child_environ

PRELUDE = """
import ctypes, threading
from hip import hip
def st(result):
    return int(result[0])
HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def launch_host_func(stream, fn):
    address = ctypes.cast(fn, ctypes.c_void_p).value
    return st(hip.hipLaunchHostFunc(stream, address, None))
def load_kernel(name):  # (module, function) of test program `name`'s kernel `name`, on the current device
    import os
    image = open(os.path.join(os.environ["OFFLOAD_AMDGPU_PROGRAMS"], name + ".hsaco"), "rb").read()
    module = hip.hipModuleLoadData(image)[1]
    return module, hip.hipModuleGetFunction(module, name.encode())[1]
"""

HIP_ERROR_ILLEGAL_STATE = 401
HIP_ERROR_LAUNCH_FAILURE = 719


def test_hip_calls_from_a_host_function_are_refused(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
seen = {}
ptr = hip.hipMalloc(64)[1]
stream = hip.hipStreamCreateWithFlags(1)[1]
def inside(_):
    seen["malloc"] = st(hip.hipMalloc(16))
    seen["free"] = st(hip.hipFree(ptr))
    seen["query"] = st(hip.hipStreamQuery(stream))
    seen["launch"] = launch_host_func(stream, fn)
fn = HOST_FN(inside)
launched = launch_host_func(stream, fn)
synced = st(hip.hipStreamSynchronize(stream))
after = st(hip.hipFree(ptr))  # the same call outside a host function works
emit({"launched": launched, "synced": synced, "seen": seen, "after": after})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result["launched"] == 0 and result["synced"] == 0 and result["after"] == 0
    assert result["seen"] == {k: HIP_ERROR_ILLEGAL_STATE for k in ("malloc", "free", "query", "launch")}


PEERS = """
out = {"can": int(hip.hipDeviceCanAccessPeer(0, 1)[1])}
hip.hipSetDevice(0)
out["enable"] = [st(hip.hipDeviceEnablePeerAccess(1, 0)), st(hip.hipDeviceEnablePeerAccess(1, 0))]
a = hip.hipMalloc(4096)[1]
hip.hipSetDevice(1)
b = hip.hipMalloc(4096)[1]
src = (ctypes.c_ubyte * 4096)(*[i % 251 for i in range(4096)])
dst = (ctypes.c_ubyte * 4096)()
hip.hipSetDevice(0)
out["htod"] = st(hip.hipMemcpyHtoD(a, src, 4096))
out["peer"] = st(hip.hipMemcpyPeer(b, 1, a, 0, 4096))  # needs no peer access
out["peer_async"] = st(hip.hipMemcpyPeerAsync(b, 1, a, 0, 2048, None))
out["sync"] = st(hip.hipStreamSynchronize(None))
hip.hipSetDevice(1)
out["dtoh"] = st(hip.hipMemcpyDtoH(dst, b, 4096))
out["same"] = bytes(dst) == bytes(src)
emit(out)
"""


def test_peer_access_may_be_absent_or_fail_and_peer_copies_still_work(hip_runtime, hip_child) -> None:
    env = {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_DEVICES": "2"}
    ok = hip_child(PRELUDE + PEERS, env)
    absent = hip_child(PRELUDE + PEERS, {**env, "GPUSIM_HIP_PEER": "0"})
    failing = hip_child(PRELUDE + PEERS, {**env, "GPUSIM_HIP_PEER": "fail"})
    assert ok["can"] == 1 and ok["enable"] == [0, 704]  # hipErrorPeerAccessAlreadyEnabled
    assert absent["can"] == 0 and absent["enable"] == [101, 101]  # hipErrorInvalidDevice
    assert failing["can"] == 1 and failing["enable"] == [217, 217]  # hipErrorPeerAccessUnsupported
    for result in (ok, absent, failing):
        assert {k: result[k] for k in ("htod", "peer", "peer_async", "sync", "dtoh")} == dict.fromkeys(
            ("htod", "peer", "peer_async", "sync", "dtoh"), 0
        )
        assert result["same"]


def test_registered_memory_has_its_own_device_pointer(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
import mmap
size = 3 * mmap.PAGESIZE + 100
host = (ctypes.c_ubyte * size)()
address = ctypes.addressof(host)
out = {"register": st(hip.hipHostRegister(host, size, 0))}
status, device = hip.hipHostGetDevicePointer(address + 10, 0)
device = int(device)
out["get"] = int(status)
out["differs"] = device != address + 10
host[10] = 42
out["device_sees_host_write"] = ctypes.string_at(device, 1) == bytes([42])  # the same pages
ctypes.memset(device + 1, 7, 1)
out["host_sees_device_write"] = host[11] == 7
staged = (ctypes.c_ubyte * 16)(*range(16))
out["htod_to_device_ptr"] = st(hip.hipMemcpyHtoD(device, staged, 16))
out["host_has_it"] = bytes(host[10:26]) == bytes(range(16))
out["unregister_device_ptr"] = st(hip.hipHostUnregister(device - 10))  # not the registered address
out["unregister"] = st(hip.hipHostUnregister(host))
out["get_after"] = st(hip.hipHostGetDevicePointer(address, 0))
out["host_still_works"] = bytes(host[10:26]) == bytes(range(16))
emit(out)
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result == {
        "register": 0, "get": 0, "differs": True, "device_sees_host_write": True, "host_sees_device_write": True,
        "htod_to_device_ptr": 0, "host_has_it": True, "unregister_device_ptr": 713, "unregister": 0,
        "get_after": 1, "host_still_works": True,
    }  # fmt: skip


def test_two_and_four_byte_fills_need_aligned_destinations(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
p = int(hip.hipMalloc(64)[1])
emit({"d8": st(hip.hipMemsetD8Async(p + 1, 1, 8, None)), "d16": st(hip.hipMemsetD16Async(p + 1, 1, 4, None)),
      "d16_ok": st(hip.hipMemsetD16Async(p + 2, 1, 4, None)), "d32": st(hip.hipMemsetD32Async(p + 2, 1, 4, None)),
      "d32_ok": st(hip.hipMemsetD32Async(p + 4, 1, 4, None)), "sync": st(hip.hipStreamSynchronize(None))})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result == {"d8": 0, "d16": 1, "d16_ok": 0, "d32": 1, "d32_ok": 0, "sync": 0}


def test_a_faulting_kernel_leaves_a_sticky_error_until_device_reset(hip_build, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
import os, struct
module, kernel = load_kernel("fault")
out = hip.hipMalloc(4 * 256)[1]
def launch(trap_block, target=None):
    args = struct.pack("PII", int(out) if target is None else target, 256, trap_block)
    buf = ctypes.create_string_buffer(args, len(args))
    size = ctypes.c_size_t(len(args))
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(size), 3)
    return st(hip.hipModuleLaunchKernel(kernel, 4, 1, 1, 64, 1, 1, 0, None, None, extra))
res = {"good": launch(99), "good_sync": st(hip.hipStreamSynchronize(None)), "bad": launch(1)}
res["bad_sync"] = st(hip.hipStreamSynchronize(None))
res["malloc"] = st(hip.hipMalloc(8))
res["again"] = st(hip.hipDeviceSynchronize())
res["reset"] = st(hip.hipDeviceReset())
res["after_reset"] = [st(hip.hipMalloc(8)), launch(99), st(hip.hipStreamSynchronize(None))]
launch(99, target=16)  # a wild pointer: the kernel's stores fault
res["wild"] = [st(hip.hipStreamSynchronize(None)), st(hip.hipMalloc(8)), st(hip.hipDeviceReset()), st(hip.hipMalloc(8))]
emit(res)
""",
        hip_build.env(),
    )
    assert result["good"] == 0 and result["good_sync"] == 0
    assert result["bad"] in (0, HIP_ERROR_LAUNCH_FAILURE)  # the fault surfaces at the launch or the sync
    assert result["bad_sync"] == HIP_ERROR_LAUNCH_FAILURE
    assert result["malloc"] == HIP_ERROR_LAUNCH_FAILURE and result["again"] == HIP_ERROR_LAUNCH_FAILURE
    assert result["reset"] == 0 and result["after_reset"] == [0, 0, 0]
    assert result["wild"] == [700, 700, 0, 0]  # hipErrorIllegalAddress, sticky until the reset


def test_a_module_is_used_on_the_device_it_was_loaded_on(hip_build, hip_child) -> None:
    prologue = PRELUDE + """
import os
hip.hipSetDevice(1)
module, kernel = load_kernel("foo")
hip.hipSetDevice(0)
"""
    env = hip_build.env(GPUSIM_DEVICES="2")
    result = hip_child(
        prologue
        + """
wrong = st(hip.hipModuleOccupancyMaxPotentialBlockSize(kernel, 0, 0))
hip.hipSetDevice(1)
emit({"wrong": wrong, "right": st(hip.hipModuleOccupancyMaxPotentialBlockSize(kernel, 0, 0))})
""",
        env,
    )
    assert result == {"wrong": 98, "right": 0}  # hipErrorInvalidDeviceFunction
    full_env = child_environ(("OFFLOAD_", "GPUSIM_"))
    proc = subprocess.run(
        [sys.executable, "-c", prologue + "hip.hipModuleGetFunction(module, b'foo')\nprint('survived')"],
        capture_output=True, text=True, env={**full_env, **env}, timeout=120,
    )  # fmt: skip
    assert proc.returncode < 0 and "survived" not in proc.stdout  # HIP's guarantee() aborts
    assert "Device mismatch from where this module is loaded" in proc.stderr


def test_the_push_buffer_blocks_the_enqueuing_call(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
gate = threading.Event()
fn = HOST_FN(lambda _: gate.wait(60))
stream = hip.hipStreamCreateWithFlags(1)[1]
p = hip.hipMalloc(64)[1]
done = []
launch_host_func(stream, fn)
def enqueue():
    for _ in range(20):
        done.append(st(hip.hipMemsetD8Async(p, 1, 8, stream)))
thread = threading.Thread(target=enqueue)
thread.start()
thread.join(2)  # a hang guard only: the enqueuer must still be blocked after this
blocked_at = len(done)
gate.set()
thread.join(60)
emit({"blocked_at": blocked_at, "done": done, "sync": st(hip.hipStreamSynchronize(stream))})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_PUSH_BUFFER": "8"},
    )
    assert result["blocked_at"] <= 8  # the host function and at most 7 fills fit; the rest waited
    assert result["done"] == [0] * 20 and result["sync"] == 0


def test_events_are_counted_until_destroyed(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
live = ctypes.CDLL("libamdhip64.so").gpusim_hip_live_events
live.restype = ctypes.c_long
a, b = hip.hipEventCreate()[1], hip.hipEventCreateWithFlags(2)[1]
two = live()
hip.hipEventDestroy(a)
emit({"two": two, "one": live(), "again": st(hip.hipEventDestroy(b)), "zero": live()})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result == {"two": 2, "one": 1, "again": 0, "zero": 0}


def test_device_memory_is_not_host_memory(hip_runtime) -> None:
    """A host dereference of hipMalloc memory faults, as on a GPU (simcore's protection keys);
    registered and hipHostMalloc memory stay host memory."""
    code = PRELUDE + """
import sys
why = ctypes.c_char_p()
lib = ctypes.CDLL("libamdhip64.so")
if not lib.gpusim_memory_protected(ctypes.byref(why)):
    print("UNPROTECTED", why.value.decode(), flush=True)
    sys.exit(0)
host = int(hip.hipHostMalloc(64, 0)[1])
ctypes.memset(host, 1, 64)  # pinned host memory: fine
device = int(hip.hipMalloc(64)[1])
print("READING", flush=True)
ctypes.string_at(device, 1)
print("READ", flush=True)
"""
    env = child_environ(("OFFLOAD_", "GPUSIM_"))
    env["LD_LIBRARY_PATH"] = str(hip_runtime)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    if proc.stdout.startswith("UNPROTECTED"):
        pytest.skip(f"device memory protection is off on this machine: {proc.stdout.strip()}")
    assert "READING" in proc.stdout and "READ\n" not in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == -11, (proc.returncode, proc.stderr)  # SIGSEGV (SEGV_PKUERR)


def test_cooperative_launches_need_every_block_resident(hip_build, hip_child) -> None:
    """hipModuleLaunchCooperativeKernel (issue 17): a grid within the occupancy times the compute
    units runs (its arguments through kernelParams); one block more is hipErrorCooperativeLaunchTooLarge."""
    result = hip_child(
        PRELUDE
        + """
import os
module, kernel = load_kernel("foo")
per_cu = hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(kernel, 64, 0)
cus = hip.hipDeviceGetAttribute(hip.hipDeviceAttribute_t.hipDeviceAttributeMultiprocessorCount, 0)[1]
limit = per_cu[1] * cus
out = hip.hipMalloc(4 * 64 * (limit + 1))[1]
slot = ctypes.c_void_p(int(out))
params = (ctypes.c_void_p * 1)(ctypes.addressof(slot))
def launch(groups):
    return st(hip.hipModuleLaunchCooperativeKernel(kernel, groups, 1, 1, 64, 1, 1, 0, None, ctypes.addressof(params)))
res = {"occupancy": st(per_cu), "per_cu": per_cu[1], "fits": launch(limit), "sync": st(hip.hipStreamSynchronize(None))}
back = (ctypes.c_uint32 * 64)()
hip.hipMemcpy(ctypes.addressof(back), out, 4 * 64, hip.hipMemcpyKind.hipMemcpyDeviceToHost)
res["data"] = list(back)[:4]
res["too_large"] = launch(limit + 1)
res["bad_block"] = st(hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(kernel, 0, 0))
emit(res)
""",
        hip_build.env(),
    )
    assert result["occupancy"] == 0 and result["per_cu"] >= 1
    assert result["fits"] == 0 and result["sync"] == 0 and result["data"] == [0, 1, 2, 3]
    assert result["too_large"] == 720  # hipErrorCooperativeLaunchTooLarge
    assert result["bad_block"] == 1  # hipErrorInvalidValue


@pytest.mark.parametrize("knob", ["1", "0"])
def test_cooperative_launches_need_cooperative_groups(hip_build, hip_child, knob: str) -> None:
    """clr's ihipLaunchKernel_validate: a cooperative launch on a device without cooperative groups
    (hipDeviceAttributeCooperativeLaunch 0: GPUSIM_HIP_COOPERATIVE=0) is hipErrorLaunchFailure (719);
    a plain launch still runs."""
    result = hip_child(
        PRELUDE
        + """
module, kernel = load_kernel("foo")
out = hip.hipMalloc(4 * 64)[1]
slot = ctypes.c_void_p(int(out))
params = (ctypes.c_void_p * 1)(ctypes.addressof(slot))
attribute = hip.hipDeviceGetAttribute(hip.hipDeviceAttribute_t.hipDeviceAttributeCooperativeLaunch, 0)
res = {"attribute": attribute[1], "attribute_status": st(attribute)}
res["cooperative"] = st(hip.hipModuleLaunchCooperativeKernel(kernel, 1, 1, 1, 64, 1, 1, 0, None, ctypes.addressof(params)))
res["plain"] = st(hip.hipModuleLaunchKernel(kernel, 1, 1, 1, 64, 1, 1, 0, None, ctypes.addressof(params), None))
res["sync"] = st(hip.hipStreamSynchronize(None))
emit(res)
""",
        hip_build.env(GPUSIM_HIP_COOPERATIVE=knob),
    )
    assert result["attribute_status"] == 0 and result["attribute"] == int(knob)
    assert result["cooperative"] == (0 if knob == "1" else 719)  # hipErrorLaunchFailure
    assert result["plain"] == 0 and result["sync"] == 0


def test_prefetch_of_managed_memory(hip_runtime, hip_child) -> None:
    """hipMemPrefetchAsync (issue 17's olMemPrefetch): managed ranges only; a device or hipCpuDeviceId."""
    result = hip_child(
        PRELUDE
        + """
managed = hip.hipMallocManaged(4096, 1)[1]
plain = hip.hipMalloc(4096)[1]
stream = hip.hipStreamCreateWithFlags(0)[1]
ctypes.memset(int(managed), 7, 4096)
res = {
    "to_device": st(hip.hipMemPrefetchAsync(managed, 4096, 0, stream)),
    "to_host": st(hip.hipMemPrefetchAsync(int(managed) + 1024, 1024, -1, stream)),
    "past_end": st(hip.hipMemPrefetchAsync(managed, 4097, 0, stream)),
    "not_managed": st(hip.hipMemPrefetchAsync(plain, 64, 0, stream)),
    "no_device": st(hip.hipMemPrefetchAsync(managed, 64, 9, stream)),
}
hip.hipStreamSynchronize(stream)
res["data"] = ctypes.string_at(int(managed), 4096) == b"\\x07" * 4096
emit(res)
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result["to_device"] == result["to_host"] == 0 and result["data"] is True
    assert result["past_end"] == result["not_managed"] == 1  # hipErrorInvalidValue
    assert result["no_device"] == 101  # hipErrorInvalidDevice


RECT = """
device = hip.hipMalloc(4096)[1]
host = (ctypes.c_ubyte * 4096)(*[i % 251 for i in range(4096)])
back = (ctypes.c_ubyte * 4096)()
stream = hip.hipStreamCreateWithFlags(0)[1]

def params(dst, src, width, height, depth, kind, pitch=64, rows=8, src_pos=(0, 0, 0), dst_pos=(0, 0, 0)):
    p = hip.hipMemcpy3DParms()
    for side, address, pos, where in ((p.srcPtr, src, src_pos, p.srcPos), (p.dstPtr, dst, dst_pos, p.dstPos)):
        side.ptr, side.pitch, side.xsize, side.ysize = address, pitch, pitch, rows
        where.x, where.y, where.z = pos
    p.extent.width, p.extent.height, p.extent.depth = width, height, depth
    p.kind = hip.hipMemcpyKind(kind)
    return p

H, D = ctypes.addressof(host), int(device)
B = ctypes.addressof(back)
out = {}
out["to_device"] = st(hip.hipMemcpy3DAsync(params(D, H, 16, 5, 3, 1, src_pos=(4, 1, 0)), stream))
out["sync"] = st(hip.hipStreamSynchronize(stream))
out["back"] = st(hip.hipMemcpy3D(params(B, D, 16, 5, 3, 2)))
out["copied"] = all(
    back[z * 512 + y * 64 + x] == host[z * 512 + (y + 1) * 64 + 4 + x]
    for z in range(3) for y in range(5) for x in range(16)
)
out["gaps_untouched"] = all(back[z * 512 + y * 64 + x] == 0 for z in range(3) for y in range(5) for x in range(16, 64))
out["pitch_below_width"] = st(hip.hipMemcpy3D(params(D, H, 60, 1, 1, 1, src_pos=(8, 0, 0))))
out["ysize_below_rows"] = st(hip.hipMemcpy3D(params(D, H, 16, 8, 2, 1, dst_pos=(0, 1, 0))))
out["last_row_fits"] = st(hip.hipMemcpy3D(params(D, H, 64, 8, 8, 1)))
out["row_past_allocation"] = st(hip.hipMemcpy3D(params(D, H, 64, 8, 9, 1)))
out["zero_extent"] = st(hip.hipMemcpy3D(params(D, H, 0, 5, 3, 1)))
emit(out)
"""


def test_memcpy3d_checks_every_row_and_runs_in_stream_order(hip_runtime, hip_child) -> None:
    """hipMemcpy3D(Async) on linear memory (hipMemcpy3DParms): a pitched host->device copy on a
    stream and a synchronous one back copy exactly the extent; a pitch below pos.x + width is
    hipErrorInvalidPitchValue, a ysize below pos.y + height (several slices) and a row past the
    allocation are hipErrorInvalidValue; a zero extent copies nothing."""
    out = hip_child(PRELUDE + RECT, {"LD_LIBRARY_PATH": str(hip_runtime)})
    assert out["to_device"] == 0 and out["sync"] == 0 and out["back"] == 0
    assert out["copied"] and out["gaps_untouched"]
    assert out["pitch_below_width"] == 12  # hipErrorInvalidPitchValue
    assert out["ysize_below_rows"] == 1
    assert out["last_row_fits"] == 0
    assert out["row_past_allocation"] == 1
    assert out["zero_extent"] == 0
