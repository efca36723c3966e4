"""The host backend's native queues at their end: releases racing submissions, a host function
calling the final olShutDown, no thread outliving it, Ctrl-C during waits and releases."""

from __future__ import annotations

import threading

import offload as ol
from offload_host._queue import HostQueue

from helpers import shutdown_from_host_function


#: Child code after `import os` and `import offload as ol`: `tasks()` counts the process's
#: threads, `before` is that count before olInit, `found` lists the devices after it.
_COUNTED_START = """
tasks = lambda: len(os.listdir("/proc/self/task"))
before = tasks()
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
"""


#: The children that count the process's OS threads load the host backend alone (another
#: driver, as PoCL, keeps its own worker threads for the life of the process).
HOST_ONLY = {"OFFLOAD_BACKENDS": "host"}


# --- release races and the worker's end ---------------------------------------------------------


def test_submitting_while_another_thread_releases_never_deadlocks() -> None:
    for _ in range(200):
        queue = HostQueue()
        accepted, ran, refused = [0], [0], []

        def submit() -> None:
            for _ in range(200):
                try:
                    queue.submit(lambda: ran.__setitem__(0, ran[0] + 1))
                except ol.OffloadError as error:
                    refused.append(error.code)
                    return
                accepted[0] += 1

        thread = threading.Thread(target=submit)
        thread.start()
        queue.synchronize(True)
        thread.join(10)
        assert not thread.is_alive()
        assert set(refused) <= {ol.ErrorCode.INVALID_QUEUE}
        assert ran[0] == accepted[0], "work accepted before the release was lost"
        assert queue._thread is None


def test_destroy_racing_host_function_submissions(host: ol.DeviceHandle) -> None:
    for _ in range(100):
        queue = ol.olCreateQueue(host)
        errors: list[ol.ErrorCode] = []

        def submit() -> None:
            for _ in range(100):
                try:
                    ol.olLaunchHostFunction(queue, lambda _: None)
                except ol.OffloadError as error:
                    errors.append(error.code)
                    return

        thread = threading.Thread(target=submit)
        thread.start()
        ol.olDestroyQueue(queue)
        thread.join(10)
        assert not thread.is_alive() and set(errors) <= {ol.ErrorCode.INVALID_QUEUE}


def test_a_host_function_may_call_the_final_shutdown(run_python) -> None:  # noqa: ANN001
    proc = run_python(
        """
import os, threading, time
import offload as ol
"""
        + _COUNTED_START
        + """
queue = ol.olCreateQueue(found[-1])
"""
        + shutdown_from_host_function("queue")
        + """
assert done.wait(20), "olShutDown from a host function deadlocked"
deadline = time.monotonic() + 10
while tasks() > before and time.monotonic() < deadline:
    time.sleep(0.01)
print(result, dropped, tasks() - before, threading.active_count())
""",
        env=HOST_ONLY,
    )
    assert proc.stdout.split() == ["['ok']", "[]", "0", "1"], proc.stdout + proc.stderr


def test_no_thread_outlives_the_final_shutdown(run_python) -> None:  # noqa: ANN001
    proc = run_python(
        """
import os, struct, threading, time
import offload as ol
from offload_host import build_test_kernel
"""
        + _COUNTED_START
        + """
dev = found[-1]
program = ol.olCreateProgram(dev, build_test_kernel("noargs"))
kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
one = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
gate = threading.Event()
queues = [ol.olCreateQueue(dev) for _ in range(6)]
ol.olLaunchHostFunction(queues[0], lambda _: gate.wait(0.3))
event = ol.olCreateEvent(queues[0])
for q in queues[1:]:
    ol.olWaitEvents(q, [event])
    for _ in range(100):
        ol.olLaunchKernel(q, dev, kernel, None, one)
    ol.olLaunchHostFunction(q, lambda _: None)
ol.olDestroyQueue(queues[1])  # busy: parked
during = tasks()
ol.olShutDown()
# every thread was joined; the kernel drops a joined thread's /proc/self/task entry a moment after
# pthread_join returns (the tid is cleared before the task is released), so allow that moment
deadline = time.monotonic() + 10
while tasks() > before and time.monotonic() < deadline:
    time.sleep(0.01)
print(during > before, tasks() - before, threading.active_count())
""",
        env=HOST_ONLY,
    )
    assert proc.stdout.split() == ["True", "0", "1"], proc.stdout + proc.stderr


# --- interrupts ----------------------------------------------------------------------------------


def test_ctrl_c_interrupts_waits_and_leaves_the_queue_consistent(run_python) -> None:  # noqa: ANN001
    proc = run_python(
        """
import os, signal, threading, time
import offload as ol
"""
        + _COUNTED_START
        + """
queue = ol.olCreateQueue(found[-1])
gate, ran = threading.Event(), []
ol.olLaunchHostFunction(queue, lambda _: gate.wait(60))
event = ol.olCreateEvent(queue)
ol.olLaunchHostFunction(queue, ran.append, "after")
for wait in (lambda: ol.olSyncQueue(queue), lambda: ol.olSyncEvent(event)):
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        wait()
        print("not-interrupted")
    except KeyboardInterrupt:
        print("interrupted", time.monotonic() - start < 5)
print(ol.olQueryQueue(queue), ran)
gate.set()
ol.olSyncQueue(queue)
ol.olSyncEvent(event)
print(ol.olQueryQueue(queue), ran)
ol.olDestroyQueue(queue)
ol.olShutDown()
print(tasks() - before)
""",
        env=HOST_ONLY,
    )
    lines = proc.stdout.splitlines()
    assert lines == ["interrupted True", "interrupted True", "False []", "True ['after']", "0"], proc.stdout + proc.stderr


def test_ctrl_c_during_a_release_drops_unstarted_work_and_ends_the_worker(run_python) -> None:  # noqa: ANN001
    proc = run_python(
        """
import os, signal, threading, time
import offload as ol
from offload_host._queue import HostQueue
tasks = lambda: len(os.listdir("/proc/self/task"))
before = tasks()
queue, ran = HostQueue(), []
queue.submit(time.sleep, 0.5)
queue.submit(ran.append, "dropped")
threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    queue.synchronize(True)
    print("not-interrupted")
except KeyboardInterrupt:
    print("interrupted")
time.sleep(0.05)
try:
    queue.submit(ran.append, "late")
except ol.OffloadError as error:
    print(error.code.name)
print(ran, queue._thread, tasks() - before, queue.pending())
"""
    )
    assert proc.stdout.split() == ["interrupted", "INVALID_QUEUE", "[]", "None", "0", "False"], proc.stdout + proc.stderr
