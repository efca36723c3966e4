"""The simulated HIP runtime's strict memory rules, through raw hip-python calls (no offload),
each in a child process (tests/simulators/hip/README.md, "strict rules"): the device pointer of
registered host memory, fill alignment, device memory that is not host memory, prefetch of
managed memory, and hipMemcpy3D's checks of every row."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import child_environ

from amdgpu_child import RAW_PRELUDE as PRELUDE


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
