"""Host kernel launches refused or failed across queues: a launch over the local memory limit is
refused every time, queued or not (on both paths), and a fault fails every queue of its device
and still names its kernel after the program is gone."""

from __future__ import annotations

import json

import pytest

from helpers import ERROR_OF, HOST_CHILD_PRELUDE
from kernel_fault_cases import PATHS, run_child


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
