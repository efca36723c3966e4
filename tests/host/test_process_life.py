"""Host queues apply backpressure, and Ctrl-C stops a launch loop, a waiting sync and a long
synchronous launch.

Each case runs in a child interpreter (a hang is then one failed test, through the timeout).
Timing bounds here are hang guards measured on the child's own clock, with a generous margin
for a loaded 2-core machine; the backpressure bound is exact (counted, not timed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import child_environ, HOST_CHILD_PRELUDE

COMMON = HOST_CHILD_PRELUDE + r"""
import ctypes, struct, sys, time

SOURCE = '''#include <offload_host.h>
#include <stdint.h>
#include <time.h>
struct spin_args { uint64_t *counter; uint64_t ns; };
OFFLOAD_KERNEL_PARAMS(spin, struct spin_args, OFFLOAD_POINTER(counter), OFFLOAD_UINT(ns));
OFFLOAD_KERNEL(spin) {
  const struct spin_args *a = OFFLOAD_ARGS(struct spin_args);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do { clock_gettime(CLOCK_MONOTONIC, &t); } while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t.tv_nsec - t0.tv_nsec) < a->ns);
  __atomic_fetch_add(a->counter, 1, __ATOMIC_RELAXED);
}
'''
program, spin = build_kernel(SOURCE, "spin")
counter = ol.olMemAlloc(host, ol.AllocType.MANAGED, 8)
ctypes.memset(counter, 0, 8)
ONE = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
def done():
    return ctypes.c_uint64.from_address(counter).value
queue = ol.olCreateQueue(host)
"""

BACKPRESSURE = COMMON + r"""
N = 4000
args = struct.pack("PQ", counter, 100_000)  # 0.1 ms each: 0.4 s of work
worst = 0
for i in range(N):
    ol.olLaunchKernel(queue, host, spin, args, ONE)
    worst = max(worst, i + 1 - done())
print("behind", worst)
ol.olSyncQueue(queue)
print("done", done())
"""


def test_a_queue_holds_at_most_1024_pending_ops(run_python) -> None:
    out = run_python(BACKPRESSURE).stdout.split()
    behind, total = int(out[1]), int(out[3])
    assert total == 4000
    # the enqueuer never ran more than the queue's bound ahead of its device (old: about 4000)
    assert behind <= 1024, behind


def _interrupt(code: str, wait: float, start_marker: str = "ready") -> tuple[float, str]:
    """Run ``code`` in a child, send SIGINT once it prints ``start_marker``; return the seconds
    between the signal and the child's KeyboardInterrupt (its own report) and its output."""
    env = child_environ("OFFLOAD_")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == start_marker, (line, child.stderr.read() if child.stderr else "")
        time.sleep(wait)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, (out, err)
    caught = float(out.split("caught")[1].split()[0])
    return caught - sent, out


LOOP = COMMON + r"""
args = struct.pack("PQ", counter, 2_000_000)  # 2 ms each
try:
    for i in range(1_000_000):
        ol.olLaunchKernel(queue, host, spin, args, ONE)
        if i == 50:
            print("ready", flush=True)
except KeyboardInterrupt:
    print("caught", time.monotonic(), "launched", i, flush=True)
ol.olSyncQueue(queue)  # what was queued still runs: at most the queue's bound
print("finished", done())
"""

SYNC = COMMON + r"""
args = struct.pack("PQ", counter, 4_000_000)
for i in range(1000):  # 4 s of queued work: the executor runs turns of 256 ops, then the sync helps
    ol.olLaunchKernel(queue, host, spin, args, ONE)
print("ready", flush=True)
try:
    ol.olSyncQueue(queue)
    print("caught never")
except KeyboardInterrupt:
    print("caught", time.monotonic(), "done", done(), flush=True)
import os; os._exit(0)
"""


SYNC_LAUNCH = COMMON + r"""
args = struct.pack("PQ", counter, 2_000_000)  # 2 ms per work-group
GRID = ol.KernelLaunchSizeArgs(1, (15000, 1, 1), (1, 1, 1))  # 30 s of groups on one thread
print("ready", flush=True)
try:
    ol.olLaunchKernel(None, host, spin, args, GRID)
    print("caught never")
except KeyboardInterrupt:
    print("caught", time.monotonic(), "done", done(), flush=True)
ol.olDestroyQueue(queue)
ol.olShutDown()  # the interrupted launch left nothing running
print("shut down")
"""


@pytest.mark.parametrize("case", ["launch loop", "waiting sync", "synchronous launch"])
def test_ctrl_c_stops_within_a_second(case: str) -> None:
    # the sync is signalled once it helps run the queue itself (after the executor's first turn)
    code, wait = {"launch loop": (LOOP, 0.3), "waiting sync": (SYNC, 1.5), "synchronous launch": (SYNC_LAUNCH, 1.0)}[case]
    delay, out = _interrupt(code, wait)
    assert delay < 1.0, (delay, out)
    if case == "synchronous launch":  # the groups not started were dropped (old: all 15000 ran)
        assert int(out.split("done")[1].split()[0]) < 15000 and "shut down" in out
    elif case == "launch loop":
        launched = int(out.split("launched")[1].split()[0])
        assert int(out.split("finished")[1].split()[0]) == launched  # every launch made ran
    else:
        assert int(out.split("done")[1].split()[0]) < 1000  # interrupted before the end
