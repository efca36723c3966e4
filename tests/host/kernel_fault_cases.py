"""What the tests of host kernel faults share (tests/host/test_kernel_faults_*.py): the two paths
to run each case on, the faulting kernels, and the child that launches one of them, tries every
kind of later call on the faulted device and a fresh session, and reports each outcome.

Every case runs in a child interpreter, on both paths: the compiled core (OFFLOAD_COMPILED=1: the
launch goes through the native entry points) and the pure-Python one (OFFLOAD_COMPILED=0).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from helpers import ERROR_OF, HOST_CHILD_PRELUDE, WILD_KERNEL, child_environ

PATHS = [pytest.param("1", id="compiled"), pytest.param("0", id="python")]

#: ``wild`` (helpers.WILD_KERNEL), and kernels that divide by zero, read past an array, overflow
#: their stack, trap, and fill correctly
KERNELS = WILD_KERNEL + r"""

struct divide_args { int32_t *out; int32_t d; };
OFFLOAD_KERNEL_PARAMS(divide, struct divide_args, OFFLOAD_POINTER(out), OFFLOAD_INT(d));
OFFLOAD_KERNEL(divide) {
  const struct divide_args *a = OFFLOAD_ARGS(struct divide_args);
  OFFLOAD_FOR_EACH_ITEM(t) { a->out[offload_global_id_x(t)] = 100 / a->d; }
}

/* sum[0] += x[i] for every global id i < n: reads past x when x holds fewer than n floats */
struct sum_args { const float *x; float *sum; uint64_t n; };
OFFLOAD_KERNEL_PARAMS(sum, struct sum_args, OFFLOAD_POINTER(x), OFFLOAD_POINTER(sum), OFFLOAD_UINT(n));
OFFLOAD_KERNEL(sum) {
  const struct sum_args *a = OFFLOAD_ARGS(struct sum_args);
  OFFLOAD_FOR_EACH_ITEM(t) {
    uint64_t i = offload_global_id_x(t);
    if (i < a->n) __atomic_fetch_add((volatile int32_t *)a->sum, (int32_t)a->x[i], __ATOMIC_RELAXED);
  }
}

/* unbounded recursion the compiler cannot turn into a loop (the call goes through a volatile pointer) */
static uint64_t deeper(volatile char *above, uint64_t depth);
static uint64_t (*volatile next_call)(volatile char *, uint64_t) = deeper;
static uint64_t deeper(volatile char *above, uint64_t depth) {
  volatile char pad[512];
  pad[0] = above[0];
  return next_call(pad, depth + 1) + (uint64_t)pad[1];
}
struct recurse_args { uint64_t *out; };
OFFLOAD_KERNEL_PARAMS(recurse, struct recurse_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(recurse) {
  volatile char top[2] = {0, 0};
  OFFLOAD_ARGS(struct recurse_args)->out[0] = deeper(top, 0);
}

/* a grid barrier outside a cooperative launch traps (offload_host.h); inside one, group 1 stores
 * through a wild pointer while group 0 waits at the barrier */
struct trap_args { uint64_t *p; };
OFFLOAD_KERNEL_PARAMS(trap, struct trap_args, OFFLOAD_POINTER(p));
OFFLOAD_KERNEL(trap) {
  const struct trap_args *a = OFFLOAD_ARGS(struct trap_args);
  if (offload_group_->group_id.x == 1) a->p[0] = 1;
  OFFLOAD_GRID_BARRIER();
}

struct fill_args { int32_t *out; };
OFFLOAD_KERNEL_PARAMS(fill, struct fill_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(fill) {
  const struct fill_args *a = OFFLOAD_ARGS(struct fill_args);
  OFFLOAD_FOR_EACH_ITEM(t) { a->out[offload_global_id_x(t)] = (int32_t)offload_global_id_x(t); }
}
"""

CHILD = HOST_CHILD_PRELUDE + ERROR_OF + r"""
import ctypes, json, os, struct, sys
import offload_host

def kernels(device):
    program = ol.olCreateProgram(device, offload_host.build_program(SOURCE, name="faults"))
    return program, {n: ol.olGetSymbol(program, n, ol.SymbolKind.KERNEL) for n in ("wild", "divide", "sum", "recurse", "trap", "fill")}

def size(groups, items=8):
    return ol.KernelLaunchSizeArgs(1, (groups, 1, 1), (items, 1, 1))

def fill_works(device, kernel):
    out = ol.olMemAlloc(device, ol.AllocType.DEVICE, 4 * 64)
    ol.olLaunchKernel(None, device, kernel, struct.pack("Q", out), size(8))
    values = list((ctypes.c_int32 * 64).from_address(out))
    ol.olMemFree(out)
    return values == list(range(64))

program, k = kernels(host)
queue = ol.olCreateQueue(host) if QUEUED else None
x = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4 * SMALL)  # SMALL floats: the sum kernel reads N
ctypes.memset(x, 0, 4 * SMALL)
out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4 * 1024)
args = {
    "wild": (k["wild"], struct.pack("Q", 0x10), size(64)),
    "divide": (k["divide"], struct.pack("Qi", out, 0), size(1)),
    # one group reads x[0], x[1], ... in order (the first read past the end is x[SMALL]); a big n
    # goes over many groups
    "sum": (k["sum"], struct.pack("QQQ", x, out, N), size(1, N) if N <= 1024 else size(N // 256, 256)),
    "recurse": (k["recurse"], struct.pack("Q", out), size(1, 1)),
    "trap": (k["trap"], struct.pack("Q", out), size(1, 1)),
    "cooperative": (k["trap"], struct.pack("Q", 0x8), size(2, 1), {ol.KernelLaunchPropType.IS_COOPERATIVE: True}),
}[CASE]
plain_a, plain_b = (ctypes.c_uint8 * 64)(), (ctypes.c_uint8 * 64)(*range(64))
ol.olMemcpy(None, out, host, out + 64, host, 8)  # both paths now hold this segment as safe (HOT)
ol.olMemcpy(None, ctypes.addressof(plain_a), host, ctypes.addressof(plain_b), host, 8)
if QUEUED:  # a block the queue keeps for its next allocation of its size
    ol.olMemFreeAsync(queue, ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 64))
result = {"launch": error_of(ol.olLaunchKernel, queue, host, *args)}
if QUEUED:
    result["sync"] = error_of(ol.olSyncQueue, queue)
# the copies and fills the core makes itself (host to host, no hook): refused once the device is faulted
result["copy_after"] = error_of(ol.olMemcpy, None, out, host, out + 64, host, 8)
result["copy_in_after"] = error_of(ol.olMemcpy, None, out, host, ctypes.addressof(plain_b), host, 8)
result["copy_out_after"] = error_of(ol.olMemcpy, None, ctypes.addressof(plain_a), host, x, host, 4)
result["fill_after"] = error_of(ol.olMemFill, None, out, b"\x01", 8)
# memory that is not the device's stays host memory
result["plain_copy_after"] = error_of(ol.olMemcpy, None, ctypes.addressof(plain_a), host, ctypes.addressof(plain_b), host, 64)
result["plain_copied"] = list(plain_a) == list(range(64))
result["alloc_after"] = error_of(ol.olMemAlloc, host, ol.AllocType.DEVICE, 64)
result["launch_after"] = error_of(ol.olLaunchKernel, None, host, k["fill"], struct.pack("Q", out), size(1))
result["queue_after"] = error_of(ol.olCreateQueue, host)
if QUEUED:
    # plain host memory, but on the faulted device's queue: refused too (the queue takes no more work)
    result["plain_copy_on_queue_after"] = error_of(ol.olMemcpy, queue, ctypes.addressof(plain_a), host, ctypes.addressof(plain_b), host, 8)
    result["sync_after"] = error_of(ol.olSyncQueue, queue)
    # the kept block handed out again after the fault: its first fill is refused as every other
    # use of the device's memory (no verdict published for a faulted device's block)
    reused = []
    result["reuse_after"] = error_of(lambda: reused.append(ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 64)))
    result["reused_fill_after"] = error_of(ol.olMemFill, queue, reused[0], b"\x01", 64) if reused else None
    result["destroy_queue"] = error_of(ol.olDestroyQueue, queue)
result["free"] = error_of(ol.olMemFree, x)
result["shutdown"] = error_of(ol.olShutDown)
ol.olInit()  # a fresh session: a fresh device
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
program2, k2 = kernels(found[-1])
result["fresh_device_runs"] = fill_works(found[-1], k2["fill"])
ol.olShutDown()
print(json.dumps(result))
"""


def run_child(code: str, env: dict[str, str], compiled: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on the path ``compiled`` ("1" or "0"), with ``env``."""
    full = child_environ()
    full.update(env, OFFLOAD_COMPILED=compiled)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def fault_case(case: str, compiled: str, queued: bool, check: bool = False, small: int = 16, n: int = 16) -> dict[str, Any]:
    """Run CHILD for ``case`` (a key of its launches), on a queue or not, with OFFLOAD_HOST_CHECK
    when ``check``; the outcomes it reports (``small`` floats allocated, ``n`` read by ``sum``)."""
    code = f"SOURCE = {KERNELS!r}\nCASE = {case!r}\nQUEUED = {queued}\nSMALL = {small}\nN = {n}\n" + CHILD
    proc = run_child(code, {"OFFLOAD_HOST_CHECK": "1"} if check else {}, compiled)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def assert_faulted(result: dict[str, Any], queued: bool, kernel: str, *parts: str) -> str:
    """The fault is the launch's error (sync) or its queue's (queued), names the kernel and each
    of `parts`; every later call on the device fails with it; teardown and a fresh device work."""
    first = result["sync"] if queued else result["launch"]
    if queued:
        assert result["launch"] is None  # as on a GPU: the launch is queued, its sync fails
    assert first is not None and first[0] == "BACKEND_FAILURE", result
    message: str = first[1]
    assert f"host kernel '{kernel}' faulted" in message, message
    for part in parts:
        assert part in message, (part, message)
    for later in ("alloc_after", "launch_after", "queue_after", *(("sync_after",) if queued else ())):
        assert result[later] == first, (later, result)
    # the core's own copies and fills of the device's memory (a segment both paths had cached) fail
    # with the fault too, as every call on a faulted CUDA context does; plain host memory is not the device's
    for later in ("copy_after", "copy_in_after", "copy_out_after", "fill_after"):
        assert result[later] is not None and result[later][0] == "BACKEND_FAILURE", (later, result)
        assert f"host kernel '{kernel}' faulted" in result[later][1], (later, result)
    assert result["plain_copy_after"] is None and result["plain_copied"] is True, result
    if queued:
        refused = result["plain_copy_on_queue_after"]
        assert refused is not None and refused[0] == "BACKEND_FAILURE", result
        assert "which faulted" in refused[1] and f"host kernel '{kernel}' faulted" in refused[1], refused
    # releasing what was made still works, the session ends cleanly, a fresh one runs kernels
    assert result["free"] is None and result["shutdown"] is None, result
    if queued:
        assert result["destroy_queue"] is None, result
        assert result["reuse_after"] is None, result  # (a pooled block: no driver call to fail)
        code, details = result["reused_fill_after"]  # refused by the range check, which names the block
        assert code == "BACKEND_FAILURE" and "lies in the DEVICE allocation" in details, result
        assert f"host kernel '{kernel}' faulted" in details, result
    assert result["fresh_device_runs"] is True, result
    return message

