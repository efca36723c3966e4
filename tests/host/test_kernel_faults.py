"""A host kernel that faults fails like a GPU kernel (issue 29): its launch's error names the kernel
and the address, the device is faulted (every later call on it fails with BACKEND_FAILURE, as a
CUDA context after an illegal address) until olShutDown, and the process lives on: a fresh olInit
gives a fresh device that runs kernels again. Faults outside kernel code still reach the handlers
that were there before (Python's faulthandler, the default action).

Every case runs in a child interpreter, on both paths: the compiled core (OFFLOAD_COMPILED=1: the
launch goes through the native entry points) and the pure-Python one (OFFLOAD_COMPILED=0).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest

from helpers import ERROR_OF, HOST_CHILD_PRELUDE, child_environ

PATHS = [pytest.param("1", id="compiled"), pytest.param("0", id="python")]

KERNELS = r"""
#include <offload_host.h>
#include <stdint.h>

struct wild_args { uint64_t *p; };
OFFLOAD_KERNEL_PARAMS(wild, struct wild_args, OFFLOAD_POINTER(p));
OFFLOAD_KERNEL(wild) {
  const struct wild_args *a = OFFLOAD_ARGS(struct wild_args);
  OFFLOAD_FOR_EACH_ITEM(t) { a->p[offload_global_id_x(t)] = 1; }
}

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
    full = child_environ()
    full.update(env, OFFLOAD_COMPILED=compiled)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def fault_case(case: str, compiled: str, queued: bool, check: bool = False, small: int = 16, n: int = 16) -> dict[str, Any]:
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


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_storing_through_a_wild_pointer_fails_its_launch(compiled: str, queued: bool) -> None:
    """64 groups store through address 0x10 + 8 * id on the pool's workers and the caller."""
    result = fault_case("wild", compiled, queued)
    assert_faulted(result, queued, "wild", "SIGSEGV (address not mapped)", "address 0x")


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_dividing_by_zero_fails_its_launch(compiled: str, queued: bool) -> None:
    result = fault_case("divide", compiled, queued)
    assert_faulted(result, queued, "divide", "SIGFPE (integer divide by zero)", "(divide+0x")


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_reading_past_a_too_small_array_is_reported_with_the_allocation(compiled: str, queued: bool) -> None:
    """OFFLOAD_HOST_CHECK=1: a 10-float allocation ends at a guard page, so the kernel's read of
    x[10] faults at once and the error names the allocation, its size and the offset, as
    compute-sanitizer does for a GPU kernel."""
    result = fault_case("sum", compiled, queued, check=True, small=10, n=64)
    message = assert_faulted(result, queued, "sum", "SIGSEGV", "reading address 0x")
    assert "0 bytes past the end of the 40-byte allocation at 0x" in message and "(offset 40)" in message, message


@pytest.mark.parametrize("compiled", PATHS)
def test_without_the_checking_mode_a_read_far_past_a_small_array_still_fails_its_launch(compiled: str) -> None:
    """Without guard pages an allocation is whole pages of its own: a read that leaves them by far
    (a 16-float allocation, n = 2**28: 1 GiB read) reaches unmapped memory and is reported (the
    checking mode is what catches the first byte past the end)."""
    result = fault_case("sum", compiled, False, small=16, n=1 << 28)
    message = assert_faulted(result, False, "sum", "reading address 0x")
    # unmapped memory (SIGSEGV), or a file mapped beyond its end, such as a program image (SIGBUS)
    assert "faulted: SIGSEGV" in message or "faulted: SIGBUS" in message, message
    assert "allocation" not in message  # no checked allocation to name


@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_overflowing_its_stack_fails_its_launch(compiled: str) -> None:
    """Unbounded recursion on the launching thread: the handler runs on an alternate stack."""
    result = fault_case("recurse", compiled, False)
    assert_faulted(result, False, "recurse", "SIGSEGV")


@pytest.mark.parametrize("compiled", PATHS)
def test_a_kernel_trapping_fails_its_launch(compiled: str) -> None:
    """OFFLOAD_GRID_BARRIER outside a cooperative launch is __builtin_trap(): SIGILL."""
    result = fault_case("trap", compiled, False)
    assert_faulted(result, False, "trap", "SIGILL (illegal instruction (a trap?)) at instruction 0x")


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queued"])
@pytest.mark.parametrize("compiled", PATHS)
def test_a_cooperative_group_faulting_fails_its_launch_and_releases_the_barrier(compiled: str, queued: bool) -> None:
    """A cooperative launch's groups run on threads of their own, each under the fault guard: one
    group's fault breaks the grid barrier the others wait at, and the launch fails with it."""
    result = fault_case("cooperative", compiled, queued)
    assert_faulted(result, queued, "trap", "SIGSEGV (address not mapped)", "writing address 0x8")


def test_the_checking_mode_still_runs_correct_kernels_on_exact_allocations() -> None:
    """Allocations right-aligned against a guard page hold their data: a kernel that stays inside
    a 10-float allocation, and copies in and out of it, see exactly its bytes."""
    code = HOST_CHILD_PRELUDE + ERROR_OF + f"SOURCE = {KERNELS!r}\n" + r"""
import ctypes, struct, offload_host
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="faults"))
sum_k = ol.olGetSymbol(program, "sum", ol.SymbolKind.KERNEL)
x = ol.olMemAlloc(host, ol.AllocType.DEVICE, 40)
out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4)
assert (x + 40) % 4096 == 0, hex(x)  # right-aligned: its end is the guard page
values = (ctypes.c_float * 10)(*range(1, 11))
ol.olMemcpy(None, x, host, ctypes.addressof(values), host, 40)
ctypes.memset(out, 0, 4)
ol.olLaunchKernel(None, host, sum_k, struct.pack("QQQ", x, out, 10), ol.KernelLaunchSizeArgs(1, (2, 1, 1), (8, 1, 1)))
print(ctypes.c_int32.from_address(out).value)
ol.olMemFree(x)
ol.olShutDown()
"""
    proc = run_child(code, {"OFFLOAD_HOST_CHECK": "1"}, "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["55"]


FAULTHANDLER = r"""
import faulthandler
if ENABLE_FIRST:
    faulthandler.enable()
""" + HOST_CHILD_PRELUDE + ERROR_OF + r"""
import ctypes, struct, sys, offload_host
SOURCE = '''#include <offload_host.h>
#include <stdint.h>
struct a { uint64_t *p; };
OFFLOAD_KERNEL_PARAMS(wild, struct a, OFFLOAD_POINTER(p));
OFFLOAD_KERNEL(wild) { const struct a *x = OFFLOAD_ARGS(struct a); x->p[0] = 1; }
'''
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="wild"))
wild = ol.olGetSymbol(program, "wild", ol.SymbolKind.KERNEL)
if not ENABLE_FIRST:
    faulthandler.enable()
error = error_of(ol.olLaunchKernel, None, host, wild, struct.pack("Q", 0x10), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)))
print("kernel fault:", error[0] if error else None, flush=True)

def python_code_faulting():
    ctypes.string_at(0x10)  # a fault of Python's own thread, outside any kernel

python_code_faulting()
print("survived", flush=True)
"""


def test_faults_outside_kernels_still_reach_pythons_faulthandler() -> None:
    """faulthandler enabled before olInit (as pytest, -X faulthandler and PYTHONFAULTHANDLER do): a
    kernel's fault is its launch's error and faulthandler says nothing; a fault of Python's own
    code then goes to faulthandler (its traceback) and the process dies of SIGSEGV as before."""
    proc = run_child("ENABLE_FIRST = True\n" + FAULTHANDLER, {}, "1")
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "kernel fault: BACKEND_FAILURE" in proc.stdout, proc.stdout
    assert "survived" not in proc.stdout
    assert proc.stderr.count("Fatal Python error: Segmentation fault") == 1, proc.stderr[-3000:]
    assert "in python_code_faulting" in proc.stderr, proc.stderr[-3000:]


def test_faulthandler_enabled_after_olInit_sees_a_kernel_fault_first_and_the_process_lives() -> None:
    """faulthandler enabled after olInit sits above our handler: it reports a kernel's fault
    first (and, as it does, hands the signal back to the handler below it, ours, by re-raising
    it), the launch still fails with BACKEND_FAILURE and the process goes on; the Python fault
    after it gets the default action (faulthandler uninstalled itself when it reported)."""
    proc = run_child("ENABLE_FIRST = False\n" + FAULTHANDLER, {}, "1")
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "kernel fault: BACKEND_FAILURE" in proc.stdout, proc.stdout
    assert "survived" not in proc.stdout
    assert "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr[-3000:]


def test_a_fault_sent_by_another_process_is_not_taken_for_a_kernels() -> None:
    """kill -SEGV while a kernel runs on every thread: not the kernel's fault (its si_code says it
    was sent), so the default action ends the process as it would have."""
    code = HOST_CHILD_PRELUDE + r"""
import os, signal, struct, threading, time, offload_host
SOURCE = '''#include <offload_host.h>
#include <stdint.h>
#include <time.h>
struct a { uint64_t ns; };
OFFLOAD_KERNEL_PARAMS(spin, struct a, OFFLOAD_UINT(ns));
OFFLOAD_KERNEL(spin) {
  struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
  do { clock_gettime(CLOCK_MONOTONIC, &t); } while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t.tv_nsec - t0.tv_nsec) < OFFLOAD_ARGS(struct a)->ns);
}
'''
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="spin"))
spin = ol.olGetSymbol(program, "spin", ol.SymbolKind.KERNEL)
queue = ol.olCreateQueue(host)
ol.olLaunchKernel(queue, host, spin, struct.pack("Q", 3_000_000_000), ol.KernelLaunchSizeArgs(1, (64, 1, 1), (1, 1, 1)))
time.sleep(0.3)
print("sending", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
ol.olSyncQueue(queue)
print("survived", flush=True)
"""
    # the host backend alone: a driver that brings LLVM (PoCL) installs LLVM's own SIGSEGV handler
    # above ours, and LLVM's returns from a signal that was sent, so the process would survive it
    proc = run_child(code, {"OFFLOAD_BACKENDS": "host"}, "1")
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "sending" in proc.stdout and "survived" not in proc.stdout


LOCAL_LIMIT = HOST_CHILD_PRELUDE + ERROR_OF + r"""
import json, struct, offload_host
SOURCE = '''#include <offload_host.h>
#include <stdint.h>
struct a { uint32_t *out; };
OFFLOAD_KERNEL_PARAMS(touch, struct a, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(touch) {
  unsigned char *local = OFFLOAD_LOCAL_MEM(unsigned char);
  local[offload_group_->local_mem_size - 1] = 1;
  OFFLOAD_ARGS(struct a)->out[0] = (uint32_t)offload_group_->local_mem_size;
}
'''
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="touch"))
touch = ol.olGetSymbol(program, "touch", ol.SymbolKind.KERNEL)
limit = ol.olGetDeviceInfo(host, ol.DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE)
out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4)
queue = ol.olCreateQueue(host)
over = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1), limit + 1)
at = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1), limit)
def launch(q, size):
    return error_of(ol.olLaunchKernel, q, host, touch, struct.pack("Q", out), size)
# the same size object again and again: from its second use the compiled path has found its grid
# within the device's limits and hands the launch to the native entry point
result = {
    "queued_over": [launch(queue, over) for _ in range(3)],
    "sync_over": [launch(None, over) for _ in range(3)],
    "queued_at": [launch(queue, at) for _ in range(2)],
    "sync": error_of(ol.olSyncQueue, queue),
}
import ctypes
result["ran_with"] = ctypes.c_uint32.from_address(out).value == limit
ol.olShutDown()
print(json.dumps(result))
"""


@pytest.mark.parametrize("compiled", PATHS)
def test_a_launch_over_the_local_memory_limit_is_refused_queued_or_not(compiled: str) -> None:
    """DynSharedMemory one byte over WORK_GROUP_LOCAL_MEM_SIZE: OUT_OF_RESOURCES at olLaunchKernel,
    every time, on a queue too (the native entry point, which takes a size object's later launches,
    defers it to the hook, which refuses it); at the limit the launch runs with exactly that much
    local memory."""
    proc = run_child(LOCAL_LIMIT, {}, compiled)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    for key in ("queued_over", "sync_over"):
        for error in result[key]:
            assert error is not None and error[0] == "OUT_OF_RESOURCES", result
            assert "exceeds the host's local memory limit" in error[1], result
    assert result["queued_at"] == [None, None] and result["sync"] is None and result["ran_with"] is True, result


BUSY_QUEUES = HOST_CHILD_PRELUDE + ERROR_OF + r"""
import json, struct, offload_host
SOURCE = '''#include <offload_host.h>
#include <stdint.h>
#include <time.h>
struct a { uint64_t *p; uint64_t ns; };
OFFLOAD_KERNEL_PARAMS(late, struct a, OFFLOAD_POINTER(p), OFFLOAD_UINT(ns));
OFFLOAD_KERNEL(late) {
  const struct a *x = OFFLOAD_ARGS(struct a);
  struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
  do { clock_gettime(CLOCK_MONOTONIC, &t); } while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t.tv_nsec - t0.tv_nsec) < x->ns);
  x->p[0] += 1;
}
'''
program = ol.olCreateProgram(host, offload_host.build_program(SOURCE, name="late"))
late = ol.olGetSymbol(program, "late", ol.SymbolKind.KERNEL)
one = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
counter = ol.olMemAlloc(host, ol.AllocType.DEVICE, 8)
first, second = ol.olCreateQueue(host), ol.olCreateQueue(host)
for _ in range(10):
    ol.olLaunchKernel(first, host, late, struct.pack("QQ", counter, 1_000_000), one)
ol.olLaunchKernel(first, host, late, struct.pack("QQ", 0x8, 0), one)  # faults
for _ in range(200):  # 0.2 s of work queued on the other queue, most of it after the fault
    ol.olLaunchKernel(second, host, late, struct.pack("QQ", counter, 1_000_000), one)
result = {
    "free_while_busy": error_of(ol.olMemFree, counter),
    "destroy_program": error_of(ol.olDestroyProgram, program),  # waits for its launches
    "sync_second": error_of(ol.olSyncQueue, second),
    "destroy_first": error_of(ol.olDestroyQueue, first),  # it kept the fault, nobody synced it
    "destroy_second": error_of(ol.olDestroyQueue, second),  # it has reported it already
    "shutdown": error_of(ol.olShutDown),
}
print(json.dumps(result))
"""


@pytest.mark.parametrize("compiled", PATHS)
def test_a_fault_fails_every_queue_of_the_device_and_names_the_kernel_after_its_program_is_gone(compiled: str) -> None:
    """A kernel faults on one queue while another has work queued: the other queue's work after
    the fault is not run and its sync fails with the fault; the faulting queue, never synced,
    reports it when destroyed; the message still names the kernel after olDestroyProgram (it is
    described when the fault happens); memory and programs are released as usual."""
    proc = run_child(BUSY_QUEUES, {}, compiled)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    fault = result["sync_second"]
    assert fault is not None and fault[0] == "BACKEND_FAILURE", result
    assert "host kernel 'late' faulted: SIGSEGV" in fault[1] and "writing address 0x8" in fault[1], fault
    assert result["destroy_first"] == fault, result
    assert result["free_while_busy"] is None and result["destroy_program"] is None, result
    assert result["destroy_second"] is None and result["shutdown"] is None, result
