"""The CUDA backend against the driver rules the strict simulator models (issue 15, part B).

Each scenario is one the old backend got wrong on a driver as strict as the real one:
- work without a queue returning before it is done (CUDA's "API synchronization behavior": memsets
  to device memory and device-to-device copies are asynchronous to the host, a copy from pageable
  memory returns once staged), read back by a queue that does not order against the legacy stream;
- the per-thread current-context cache going stale when another library changes the context;
- cuFuncSetAttribute (dynamic shared memory above 48 KiB) before the context was made current;
- a failed peer-access enable failing a peer copy that needs no peer access;
- the launch buffer's tail padding passed to the driver (LAUNCH_OUT_OF_RESOURCES);
- scheduling flags forced on a primary context another library holds active;
- one GPU whose primary context cannot be retained (compute mode PROHIBITED) failing the platform;
- events alive at olShutDown never destroyed (the simulator reports them at the context's reset).

The API from a host function: test_cuda_driver_rules_host_functions.py.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from cuda_child import PRELUDE, offload_child

pytestmark = pytest.mark.usefixtures("simulated")


_SYNC_WORK = offload_child(
    r"""
host = platform_devices()["host"][0]
out = {}
size = 64 << 20
dev = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, size)
q = ol.olCreateQueue(gpu)
tail = (ctypes.c_uint8 * 16)()

def tail_after_queued_read(address):
    ctypes.memset(tail, 0, 16)
    ol.olMemcpy(q, ctypes.addressof(tail), host, address + size - 16, gpu, 16)
    ol.olSyncQueue(q)
    return list(tail)

ol.olMemFill(None, dev, b"\x5a", size)
out["fill1"] = tail_after_queued_read(dev) == [0x5A] * 16
ol.olMemFill(None, dev, b"\x01\x02\x03\x04", size)
out["fill4"] = tail_after_queued_read(dev) == [1, 2, 3, 4] * 4
other = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, size)
ol.olMemFill(None, dev, b"\x33", size)
ol.olMemcpy(None, other, gpu, dev, gpu, size)
out["dtod"] = tail_after_queued_read(other) == [0x33] * 16
pageable = ctypes.create_string_buffer(b"\x44" * size, size)
ol.olMemcpy(None, dev, gpu, ctypes.addressof(pageable), host, size)
out["htod_pageable"] = tail_after_queued_read(dev) == [0x44] * 16
ol.olDestroyQueue(q); ol.olMemFree(dev); ol.olMemFree(other)
ol.olShutDown()
emit(out)
"""
)


def test_work_without_a_queue_is_complete_on_return(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_SYNC_WORK, child_env(kernels=kernels, delay_us=20000)).result
    assert out == {"fill1": True, "fill4": True, "dtod": True, "htod_pageable": True}


_CONTEXTS = (
    PRELUDE
    + r"""
import threading
from cuda.bindings import driver as cu
ol.olInit()
gpu = platform_devices()["cuda"][0]
host = platform_devices()["host"][0]
out = {}
a = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
# another library makes no context (or another device's) current between offload calls
err, second = cu.cuDeviceGet(1)
err, ctx1 = cu.cuDevicePrimaryCtxRetain(second)
cu.cuCtxSetCurrent(ctx1)
out["after_other_ctx"] = error_of(ol.olMemFill, None, a, b"\x11", 256)
back = (ctypes.c_uint8 * 4)()
ol.olMemcpy(None, ctypes.addressof(back), host, a, gpu, 4)
out["data"] = list(back)
cu.cuCtxSetCurrent(cu.CUcontext(0))
out["after_no_ctx"] = error_of(ol.olMemFree, a)
q = ol.olCreateQueue(gpu)
cu.cuCtxSetCurrent(ctx1)
prog = ol.olCreateProgram(gpu, image("localmem"))
k = ol.olGetSymbol(prog, "localmem", ol.SymbolKind.KERNEL)
buf = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 64 * 4)
result = []
def first_big_launch_on_a_new_thread():
    result.append(error_of(ol.olLaunchKernel, q, gpu, k, struct.pack("P", buf), launch(1, 64, 64 * 1024)))
    result.append(error_of(ol.olSyncQueue, q))
t = threading.Thread(target=first_big_launch_on_a_new_thread); t.start(); t.join()
out["dyn_shared_new_thread"] = result
ol.olMemFree(buf); ol.olDestroyQueue(q); ol.olDestroyProgram(prog)
ol.olShutDown()
cu.cuDevicePrimaryCtxRelease(second)
emit(out)
"""
)


def test_another_library_changing_the_current_context(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_CONTEXTS, child_env(devices=2, kernels=kernels)).result
    assert out["after_other_ctx"] is None
    assert out["data"] == [0x11] * 4
    assert out["after_no_ctx"] is None
    assert out["dyn_shared_new_thread"] == [None, None]


_PEERS = (
    PRELUDE
    + r"""
ol.olInit()
gpus = platform_devices()["cuda"]
host = platform_devices()["host"][0]
a = ol.olMemAlloc(gpus[0], ol.AllocType.DEVICE, 64)
b = ol.olMemAlloc(gpus[1], ol.AllocType.DEVICE, 64)
ol.olMemFill(None, a, b"\x21", 64)
out = {"copy": error_of(ol.olMemcpy, None, b, gpus[1], a, gpus[0], 64)}
q = ol.olCreateQueue(gpus[0])
out["queued"] = error_of(ol.olMemcpy, q, b, gpus[1], a, gpus[0], 64)
ol.olSyncQueue(q)
back = (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, ctypes.addressof(back), host, b, gpus[1], 64)
out["data"] = list(back) == [0x21] * 64
ol.olDestroyQueue(q); ol.olMemFree(a); ol.olMemFree(b)
ol.olShutDown()
emit(out)
"""
)


def test_peer_copies_need_no_peer_access(run_child: Any, child_env: Any, kernels: Any) -> None:
    for mode in ("none", "fail"):
        out = run_child(_PEERS, child_env(devices=2, kernels=kernels, GPUSIM_PEER=mode)).result
        assert out == {"copy": None, "queued": None, "data": True}, mode


_PADDING = offload_child(
    r"""
prog = ol.olCreateProgram(gpu, image("saxpy"))
k = ol.olGetSymbol(prog, "saxpy", ol.SymbolKind.KERNEL)
n = 64
x = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, n * 4)
y = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, n * 4)
(ctypes.c_float * n).from_address(x)[:] = [float(i) for i in range(n)]
(ctypes.c_float * n).from_address(y)[:] = [1.0] * n
class Args(ctypes.Structure):  # 8-byte aligned: 4 bytes of padding after a, none at the end
    _fields_ = [("a", ctypes.c_float), ("x", ctypes.c_void_p), ("y", ctypes.c_void_p), ("n", ctypes.c_uint64)]
padded = bytes(Args(2.0, x, y, n)) + bytes(8)  # a caller's larger buffer: upstream accepts it
ol.olLaunchKernel(None, gpu, k, padded, launch(1, n))
out = {"saxpy": list((ctypes.c_float * n).from_address(y)) == [2.0 * i + 1.0 for i in range(n)]}
ol.olMemFree(x); ol.olMemFree(y); ol.olDestroyProgram(prog)
ol.olShutDown()
emit(out)
"""
)


def test_a_longer_argument_buffer_launches_with_the_parameters_extent(
    run_child: Any, child_env: Any, kernels: Any
) -> None:
    assert run_child(_PADDING, child_env(kernels=kernels)).result == {"saxpy": True}


_FLAGS = (
    PRELUDE
    + r"""
from cuda.bindings import driver as cu
cu.cuInit(0)
err, dev = cu.cuDeviceGet(0)
err, ctx = cu.cuDevicePrimaryCtxRetain(dev)   # another library holds the primary context active
err, flags_before, active = cu.cuDevicePrimaryCtxGetState(dev)
ol.olInit()
gpu = platform_devices()["cuda"][0]
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
ol.olMemFree(mem)
err, flags_after, active = cu.cuDevicePrimaryCtxGetState(dev)
ol.olShutDown()
cu.cuDevicePrimaryCtxRelease(dev)
emit({"before": int(flags_before), "after": int(flags_after), "active": bool(active)})
"""
)


def test_flags_of_a_shared_active_primary_context_are_left_alone(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_FLAGS, child_env(kernels=kernels)).result
    assert out["active"] and out["after"] == out["before"]


_PTX = offload_child(
    r"""
ptx = image("saxpy", "ptx").rstrip(b"\0")
assert b".version 9.0" in ptx and b".target sm_90\n" in ptx
variants = {
    "plain": ptx,
    "newer_isa": ptx.replace(b".version 9.0", b".version 9.1"),
    "arch_specific": ptx.replace(b".target sm_90\n", b".target sm_90a\n"),
    "family_specific": ptx.replace(b".target sm_90\n", b".target sm_90f\n"),
}
out = {name: ol.olIsValidBinary(gpu, data) for name, data in variants.items()}
out["load_newer"] = error_of(ol.olCreateProgram, gpu, variants["newer_isa"] + b"\0")
ol.olShutDown()
emit(out)
"""
)


def test_ptx_is_judged_by_its_isa_version_and_target(run_child: Any, child_env: Any, kernels: Any) -> None:
    sm90 = run_child(_PTX, child_env(kernels=kernels, GPUSIM_CUDA_SM="90")).result
    assert sm90["plain"] and sm90["arch_specific"] and sm90["family_specific"]
    assert sm90["newer_isa"] is False and sm90["load_newer"][0] == "INVALID_BINARY"
    assert "PTX ISA 9.1" in sm90["load_newer"][1]
    sm100 = run_child(_PTX, child_env(kernels=kernels, GPUSIM_CUDA_SM="100")).result
    assert sm100["plain"] is True and sm100["arch_specific"] is False and sm100["family_specific"] is False


_PROHIBITED = (
    PRELUDE
    + r"""
import logging
logging.basicConfig(level=logging.WARNING)
ol.olInit()
gpus = platform_devices().get("cuda", [])
out = {"count": len(gpus), "names": [ol.olGetDeviceInfo(g, ol.DeviceInfo.NAME) for g in gpus]}
if gpus:
    a = ol.olMemAlloc(gpus[0], ol.AllocType.DEVICE, 64)
    ol.olMemFill(None, a, b"\x07", 64)
    back = (ctypes.c_uint8 * 4)()
    ol.olMemcpy(None, ctypes.addressof(back), platform_devices()["host"][0], a, gpus[0], 4)
    out["data"] = list(back)
    ol.olMemFree(a)
ol.olShutDown()
emit(out)
"""
)


def test_a_gpu_that_refuses_its_context_is_skipped_not_the_platform(
    run_child: Any, child_env: Any, kernels: Any
) -> None:
    # cuDevicePrimaryCtxRetain: "Retaining the primary context for the first time will fail with
    # CUDA_ERROR_UNKNOWN if the compute mode of the device is CU_COMPUTEMODE_PROHIBITED."
    child = run_child(_PROHIBITED, child_env(devices=3, kernels=kernels, GPUSIM_COMPUTE_MODE="0,2,0"))
    assert child.result["count"] == 2 and child.result["data"] == [7] * 4, child.stderr
    assert "skipping GPU 1" in child.stderr and "PROHIBITED" in child.stderr
    assert "leak" not in child.stderr


def test_no_usable_gpu_says_why_in_offload_backends(run_child: Any, child_env: Any) -> None:
    code = PRELUDE + r"""
ol.olInit()
emit({"count": len(platform_devices().get("cuda", []))})
ol.olShutDown()
"""
    env = child_env(devices=1, GPUSIM_COMPUTE_MODE="2")
    assert run_child(code, env).result == {"count": 0}
    shown = subprocess.run([sys.executable, "-m", "offload", "backends"], capture_output=True, text=True, env=env,
                           timeout=120)  # fmt: skip
    assert "no GPU could be used: GPU 0:" in shown.stdout + shown.stderr
    assert "PROHIBITED" in shown.stdout + shown.stderr


_EVENTS_AT_SHUTDOWN = offload_child(
    r"""
q = ol.olCreateQueue(gpu)
kept = [ol.olCreateEvent(q) for _ in range(3)]
ol.olDestroyEvent(kept.pop())  # one back in the pool, two never destroyed
ol.olSyncQueue(q)
ol.olShutDown()
emit({"ok": True})
"""
)


def test_events_alive_at_shutdown_are_destroyed(run_child: Any, child_env: Any, kernels: Any) -> None:
    child = run_child(_EVENTS_AT_SHUTDOWN, child_env(kernels=kernels))
    assert child.result == {"ok": True}
    assert "never destroyed" not in child.stderr, child.stderr
