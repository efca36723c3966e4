"""The final olShutDown, and interpreter exit, never hang without a way out (core/_drain.py).

Work that never ends (here a host function waiting for an event nobody sets) used to hold the
final ``olShutDown`` for ever, with Ctrl-C held. Now ``OFFLOAD_SHUTDOWN_TIMEOUT`` bounds the wait
and a second Ctrl-C ends it (the first says what is waited for); either way ``olShutDown`` returns an ``OL_ERRC_BACKEND_FAILURE`` naming the
pending queue and its work, releases everything else, and leaves in place what the stuck work
may use. Each case runs in a child interpreter with a timeout: the old hang is a failed test.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from helpers import HOST_CHILD_PRELUDE, child_environ

HANG_GUARD = 90  # seconds: far above every wait here; only a hang reaches it

STUCK = HOST_CHILD_PRELUDE + r"""
import ctypes, threading, time
never = threading.Event()

def wait_forever(_):
    never.wait()

queue = ol.olCreateQueue(host)
quick = ol.olCreateQueue(host)
memory = ol.olMemAlloc(host, ol.AllocType.MANAGED, 64)
ol.olLaunchHostFunction(queue, wait_forever, None)
ol.olLaunchHostFunction(quick, lambda _: None, None)

def fresh_session():
    ol.olInit()
    devices = []
    ol.olIterateDevices(lambda d, _: devices.append(d) or True)
    src = (ctypes.c_uint8 * 16)(*range(16))
    dst = (ctypes.c_uint8 * 16)()
    buf = ol.olMemAlloc(devices[-1], ol.AllocType.DEVICE, 16)
    ol.olMemcpy(None, buf, devices[-1], ctypes.addressof(src), devices[-1], 16)
    ol.olMemcpy(None, ctypes.addressof(dst), devices[-1], buf, devices[-1], 16)
    ol.olMemFree(buf)
    ol.olShutDown()
    print("fresh session", list(dst) == list(range(16)), flush=True)
"""

TIMED_OUT = STUCK + r"""
start = time.monotonic()
try:
    ol.olShutDown()
    print("no error")
except ol.OffloadError as e:
    print("ERROR", e.code.name, time.monotonic() - start, flush=True)
    print("DETAILS", e.details, flush=True)
ctypes.memset(memory, 7, 64)  # left in place: the stuck work may still use it
fresh_session()
"""


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD,
                          env={**child_environ("OFFLOAD_"), **env})  # fmt: skip


def _line(out: str, head: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(head + " "))[len(head) + 1 :]


def test_the_timeout_ends_the_wait_names_the_pending_work_and_leaves_it_its_memory() -> None:
    proc = _run(TIMED_OUT, OFFLOAD_SHUTDOWN_TIMEOUT="0.5")
    assert proc.returncode == 0, proc.stderr
    code, seconds = _line(proc.stdout, "ERROR").split()
    assert code == "BACKEND_FAILURE" and 0.4 < float(seconds) < HANG_GUARD / 2
    details = _line(proc.stdout, "DETAILS")
    assert "OFFLOAD_SHUTDOWN_TIMEOUT=0.5 s passed" in details
    assert "queue #1 of" in details and "host function __main__.wait_forever running" in details
    assert "queue #2" not in details  # the finished queue was released as usual
    assert "1 queue(s), 0 program(s), 1 allocation(s)" in details and "the backend host" in details
    assert "fresh session True" in proc.stdout  # a new session works beside what was left


def test_ctrl_c_ends_the_wait_and_is_raised_after_the_report() -> None:
    code = STUCK + r"""
print("ready", flush=True)
try:
    ol.olShutDown()
    print("returned")
except KeyboardInterrupt as e:
    print("INTERRUPTED", type(e.__context__).__name__, e.__context__.code.name, flush=True)
    print("DETAILS", e.__context__.details, flush=True)
fresh_session()
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=child_environ("OFFLOAD_"))  # fmt: skip
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # inside olShutDown's wait by now (or about to be: the signal is held either way)
        child.send_signal(signal.SIGINT)  # the first one is only told what is waited for
        assert child.stderr is not None
        told = child.stderr.readline()
        child.send_signal(signal.SIGINT)  # the second one stops the waiting
        out, err = child.communicate(timeout=HANG_GUARD)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert told.startswith("offload: olShutDown is waiting for queue #1 of") and "wait_forever running" in told
    assert told.rstrip().endswith("press Ctrl-C again to stop waiting (what is pending is then left in place and reported)")
    assert _line(out, "INTERRUPTED") == "OffloadError BACKEND_FAILURE"
    details = _line(out, "DETAILS")
    assert details.startswith("olShutDown stopped waiting (interrupted (Ctrl-C twice)); still pending: queue #1 of")
    assert "wait_forever running" in details
    assert "fresh session True" in out


def test_a_call_on_another_thread_that_never_returns_leaves_everything_in_place() -> None:
    code = STUCK + r"""
waiter = threading.Thread(target=ol.olSyncQueue, args=(queue,), daemon=True)
waiter.start()
while not any(str(c) == "olSyncQueue" for c in getattr(__import__("offload._core.runtime", fromlist=["STATE"]).STATE.ctx, "calls", [])):
    time.sleep(0.01)
try:
    ol.olShutDown()
except ol.OffloadError as e:
    print("ERROR", e.code.name, flush=True)
    print("DETAILS", e.details, flush=True)
ctypes.memset(memory, 7, 64)
fresh_session()
"""
    proc = _run(code, OFFLOAD_SHUTDOWN_TIMEOUT="0.3")
    assert proc.returncode == 0, proc.stderr
    assert _line(proc.stdout, "ERROR") == "BACKEND_FAILURE"
    details = _line(proc.stdout, "DETAILS")
    assert "still pending: calls on other threads: olSyncQueue" in details
    assert "not released (the pending work may still use it): every queue, program, allocation and device" in details
    assert "fresh session True" in proc.stdout


def test_interpreter_exit_without_shutdown_stops_waiting_at_the_timeout() -> None:
    proc = _run(STUCK + "\nprint('leaving', flush=True)\n", OFFLOAD_SHUTDOWN_TIMEOUT="0.5")
    assert proc.returncode == 0, proc.stderr
    assert "leaving" in proc.stdout
    assert "at exit without olShutDown, queued work was not finished on queue #1 of" in proc.stderr
    assert "wait_forever running (OFFLOAD_SHUTDOWN_TIMEOUT=0.5 s passed)" in proc.stderr


def test_work_that_finishes_is_released_as_before_whatever_the_timeout() -> None:
    code = HOST_CHILD_PRELUDE + r"""
import threading
ran = []
queue = ol.olCreateQueue(host)
ol.olLaunchHostFunction(queue, lambda _: ran.append(1), None)
ol.olSyncQueue(queue)
ol.olShutDown()
ol.olInit(); ol.olShutDown()
print("ran", ran, "threads", threading.active_count())
"""
    proc = _run(code, OFFLOAD_SHUTDOWN_TIMEOUT="0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ran", "[1]", "threads", "1"]  # the queue's worker thread was joined


def test_a_bad_timeout_is_reported_and_the_teardown_still_completes() -> None:
    code = HOST_CHILD_PRELUDE + r"""
try:
    ol.olShutDown()
except ol.OffloadError as e:
    print("ERROR", e.code.name, e.details)
ol.olInit()  # the session really ended: a new one starts, with one reference to drop
try:
    ol.olShutDown()
except ol.OffloadError as e:
    print("again", e.code.name)
"""
    for value in ("soon", "-1", "nan"):
        proc = _run(code, OFFLOAD_SHUTDOWN_TIMEOUT=value)
        assert proc.returncode == 0, proc.stderr
        assert _line(proc.stdout, "ERROR") == (
            f"INVALID_ARGUMENT OFFLOAD_SHUTDOWN_TIMEOUT={value!r} is not a number of seconds >= 0: olShutDown waited "
            "without a deadline"
        )
        assert "again INVALID_ARGUMENT" in proc.stdout


def test_a_cooperative_launch_whose_groups_never_meet_is_reported_at_the_timeout() -> None:
    """Group 0 skips OFFLOAD_GRID_BARRIER(): the other groups wait there for ever."""
    code = HOST_CHILD_PRELUDE + r"""
import struct
SOURCE = '''#include "offload_host.h"
struct skip_args { uint32_t *out; };
OFFLOAD_KERNEL_PARAMS(skip_barrier, struct skip_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(skip_barrier) {
  if (OFFLOAD_GROUP->group_id.x == 0) return;
  OFFLOAD_GRID_BARRIER();
}
'''
program, kernel = build_kernel(SOURCE, "skip_barrier")
out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 16)
queue = ol.olCreateQueue(host)
ol.olLaunchKernel(queue, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (4, 1, 1), (1, 1, 1)),
                  {ol.KernelLaunchPropType.IS_COOPERATIVE: True})
try:
    ol.olShutDown()
    print("no error")
except ol.OffloadError as e:
    print("ERROR", e.code.name, flush=True)
    print("DETAILS", e.details, flush=True)
"""
    proc = _run(code, OFFLOAD_SHUTDOWN_TIMEOUT="0.5")
    assert proc.returncode == 0, proc.stderr
    assert _line(proc.stdout, "ERROR") == "BACKEND_FAILURE"
    details = _line(proc.stdout, "DETAILS")
    assert "still pending: queue #1 of" in details and "device work (launches, copies or fills) not finished" in details
    assert "1 queue(s), 1 program(s), 1 allocation(s)" in details
