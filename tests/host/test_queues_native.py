"""The host backend's native queues: ordering of native and host-function work, helping waiters,
errors at the right sync, release races, interrupts, threads, big split copies, churn."""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

import offload as ol
from offload_host import _native, build_program
from offload_host._queue import HostQueue

from helpers import rss_kib, shutdown_from_host_function

#: Child code after `import os` and `import offload as ol`: `tasks()` counts the process's
#: threads, `before` is that count before olInit, `found` lists the devices after it.
_COUNTED_START = """
tasks = lambda: len(os.listdir("/proc/self/task"))
before = tasks()
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
"""

KERNELS = r"""
#include <offload_host.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

struct tid_args { long *out; };
OFFLOAD_KERNEL(tid) { *OFFLOAD_ARGS(struct tid_args)->out = syscall(SYS_gettid); }

struct bump_args { uint32_t *counter; };
OFFLOAD_KERNEL(bump) { ++*OFFLOAD_ARGS(struct bump_args)->counter; }
"""

ONE = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))

#: The children that count the process's OS threads load the host backend alone (another
#: driver, as PoCL, keeps its own worker threads for the life of the process).
HOST_ONLY = {"OFFLOAD_BACKENDS": "host"}


@pytest.fixture
def kernels(host: ol.DeviceHandle) -> Iterator[dict[str, ol.SymbolHandle]]:
    program = ol.olCreateProgram(host, build_program(KERNELS, name="queue_kernels"))
    yield {name: ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL) for name in ("tid", "bump")}
    ol.olDestroyProgram(program)


@pytest.fixture
def word(host: ol.DeviceHandle) -> Iterator[int]:
    """A zeroed 8-byte device allocation."""
    address = ol.olMemAlloc(host, ol.AllocType.DEVICE, 8)
    ctypes.memset(address, 0, 8)
    yield address
    ol.olMemFree(address)


def _u32(address: int) -> int:
    return ctypes.c_uint32.from_address(address).value


def _all_errors(error: BaseException) -> list[BaseException]:
    """Every error a sync raised: joined in ``.errors`` by the core, or in the group it mapped."""
    assert isinstance(error, ol.OffloadError)
    if len(error.errors) > 1:
        return list(error.errors)
    if isinstance(error.__cause__, BaseExceptionGroup):
        return list(error.__cause__.exceptions)
    return [error]


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


# --- ordering ----------------------------------------------------------------------------------


def test_native_and_host_function_work_run_in_queue_order(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    queue = ol.olCreateQueue(host)
    gate, started = threading.Event(), threading.Event()
    ol.olLaunchHostFunction(queue, lambda _: (started.set(), gate.wait(10)))  # everything below is queued first
    seen: list[int] = []
    expected: list[int] = []
    value = 0
    args = struct.pack("P", word)
    staged: list[ctypes.Array[ctypes.c_char]] = []  # sources of queued copies stay alive
    for i in range(60):
        if i % 10 == 0:
            value = 1000 * i
            ol.olMemFill(queue, word, struct.pack("I", value), 4)
        elif i % 7 == 0:
            value = 77 + i
            staged.append(ctypes.create_string_buffer(struct.pack("I", value), 4))
            ol.olMemcpy(queue, word, host, ctypes.addressof(staged[-1]), host, 4)
        ol.olLaunchKernel(queue, host, kernels["bump"], args, ONE)
        value += 1
        expected.append(value)
        ol.olLaunchHostFunction(queue, lambda _: seen.append(_u32(word)))
    assert started.wait(10), "the first host function never ran"  # the queue reached the gate
    assert seen == [] and _u32(word) == 0, "work ran before the blocking host function finished"
    gate.set()
    ol.olSyncQueue(queue)
    assert seen == expected
    ol.olDestroyQueue(queue)


def test_native_work_waits_for_an_event_of_another_queue(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    first, second = ol.olCreateQueue(host), ol.olCreateQueue(host)
    gate, started = threading.Event(), threading.Event()
    ol.olLaunchHostFunction(first, lambda _: (started.set(), gate.wait(10)))
    event = ol.olCreateEvent(first)
    ol.olWaitEvents(second, [event])
    ol.olLaunchKernel(second, host, kernels["bump"], struct.pack("P", word), ONE)
    later = ol.olCreateEvent(second)
    assert started.wait(10), "the first queue never reached its host function"
    assert _u32(word) == 0 and not ol.olGetEventInfo(later, ol.EventInfo.IS_COMPLETE)
    gate.set()
    ol.olSyncEvent(later)
    assert _u32(word) == 1
    for queue in (first, second):
        ol.olDestroyQueue(queue)


def test_host_functions_and_the_work_behind_them_run_on_the_worker(host: ol.DeviceHandle, kernels: dict) -> None:
    out = (ctypes.c_long * 1)()
    pool, tid = host.native.pool, kernels["tid"].native
    queue = HostQueue(None)
    gate = threading.Event()
    where: list[tuple[str, int]] = []

    def host_function() -> None:
        where.append((threading.current_thread().name, threading.get_native_id()))
        gate.wait(10)

    queue.submit(host_function)
    if queue.launch(pool, tid, struct.pack("P", ctypes.addressof(out)), 1, 1, 1, 1, 1, 1, 0):
        queue.start_worker()
    gate.set()
    queue.synchronize(True)
    assert where[0][0] == queue.name
    assert out[0] == where[0][1], "the launch queued behind the host function ran elsewhere"


# --- helping waiters -----------------------------------------------------------------------------


def test_a_waiting_caller_runs_native_work_itself(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    """No worker thread, no executor: only the syncing caller can run the work, and it does."""
    out = (ctypes.c_long * 1)()
    pool = host.native.pool
    queue = HostQueue(None)
    wants_worker = queue.launch(pool, kernels["tid"].native, struct.pack("P", ctypes.addressof(out)), 1, 1, 1, 1, 1, 1, 0)
    assert wants_worker is True  # deliberately not started
    queue.fill(pool, word, b"\x05", 4)
    queue.launch(pool, kernels["bump"].native, struct.pack("P", word), 1, 1, 1, 1, 1, 1, 0)
    event, _ = _native.Queue.record(queue)
    assert queue.pending() and not event.is_complete()
    result: list[object] = []
    waiter = threading.Thread(target=lambda: result.append((queue.sync(), threading.get_native_id())), daemon=True)
    waiter.start()
    waiter.join(10)
    assert result, "the waiting caller did not run the work (no one else could)"
    assert result[0][0] is None and out[0] == result[0][1]
    assert _u32(word) == 0x05050506 and event.is_complete() and not queue.pending()
    queue.worker_failed()
    assert queue.release(False) is None


def test_an_event_waiter_runs_native_work_up_to_the_event(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    out = (ctypes.c_long * 1)()
    pool = host.native.pool
    queue = HostQueue(None)
    queue.launch(pool, kernels["tid"].native, struct.pack("P", ctypes.addressof(out)), 1, 1, 1, 1, 1, 1, 0)
    event, _ = _native.Queue.record(queue)
    queue.launch(pool, kernels["bump"].native, struct.pack("P", word), 1, 1, 1, 1, 1, 1, 0)
    result: list[object] = []
    waiter = threading.Thread(target=lambda: result.append((event.wait(), threading.get_native_id())), daemon=True)
    waiter.start()
    waiter.join(10)
    assert result, "the event waiter did not run the work before the event"
    assert result[0][0] is None and out[0] == result[0][1] and event.is_complete()
    assert _u32(word) == 0 and queue.pending(), "work after the event ran too"
    assert queue.sync() is None and _u32(word) == 1
    queue.worker_failed()
    queue.release(False)


def test_executor_runs_native_work_without_any_sync(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    queue = ol.olCreateQueue(host)
    threads = threading.active_count()
    ol.olLaunchKernel(queue, host, kernels["bump"], struct.pack("P", word), ONE)
    deadline = time.monotonic() + 10
    while _u32(word) != 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert _u32(word) == 1 and ol.olQueryQueue(queue)
    assert threading.active_count() == threads, "native work needs no Python worker thread"
    ol.olDestroyQueue(queue)


# --- errors --------------------------------------------------------------------------------------


def _fail(message: str):  # noqa: ANN202
    def host_function(_: object) -> None:
        raise RuntimeError(message)

    return host_function


def test_every_error_is_raised_once_at_the_right_sync(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    ol.olLaunchHostFunction(queue, _fail("alone"))
    with pytest.raises(ol.OffloadError) as single:
        ol.olSyncQueue(queue)
    assert "alone" in str(single.value) and isinstance(single.value.__cause__, RuntimeError)
    assert len(_all_errors(single.value)) == 1

    gate = threading.Event()
    ran: list[int] = []
    for i in (1, 2, 3):
        ol.olLaunchHostFunction(queue, _fail(f"boom {i}"))
    ol.olLaunchHostFunction(queue, ran.append, 4)
    event = ol.olCreateEvent(queue)
    ol.olLaunchHostFunction(queue, lambda _: gate.wait(10))
    ol.olLaunchHostFunction(queue, _fail("after the event"))
    with pytest.raises(ol.OffloadError) as grouped:
        ol.olSyncEvent(event)
    messages = [str(e) for e in _all_errors(grouped.value)]
    assert len(messages) == 3 and all(f"boom {i}" in m for i, m in zip((1, 2, 3), messages)), messages
    assert ran == [4]
    gate.set()
    with pytest.raises(ol.OffloadError) as later:
        ol.olSyncQueue(queue)
    assert [("after the event" in str(e)) for e in _all_errors(later.value)] == [True]
    ol.olSyncQueue(queue)  # each error is reported once
    ol.olSyncEvent(event)
    ol.olDestroyQueue(queue)


def test_host_queue_raises_a_group_for_several_errors() -> None:
    queue = HostQueue()
    for i in range(3):
        queue.submit(_fail(f"e{i}"), None)
    with pytest.raises(ExceptionGroup) as info:
        queue.synchronize(False)
    assert [type(e) for e in info.value.exceptions] == [ol.OffloadError] * 3
    assert [str(e.__cause__) for e in info.value.exceptions] == ["e0", "e1", "e2"]
    queue.synchronize(True)


def test_native_failures_and_host_errors_are_reported_in_queue_order(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    queue = HostQueue(host.native.executor)
    queue.submit(_fail("first"), None)
    # a launch whose local memory cannot be allocated fails on the queue, not at submission
    args = struct.pack("P", word)
    if queue.launch(host.native.pool, kernels["bump"].native, args, 2, 1, 1, 1, 1, 1, 1 << 60):
        queue.start_worker()
    queue.submit(_fail("third"), None)
    with pytest.raises(ExceptionGroup) as info:
        queue.synchronize(False)
    errors = info.value.exceptions
    assert [e.code for e in errors] == [ol.ErrorCode.UNKNOWN, ol.ErrorCode.OUT_OF_RESOURCES, ol.ErrorCode.UNKNOWN]
    assert "first" in str(errors[0]) and "third" in str(errors[2]) and isinstance(errors[1].__cause__, MemoryError)
    assert _u32(word) == 0, "no group of the failed launch ran"
    queue.synchronize(True)


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


# --- copies and fills split over the pool --------------------------------------------------------


@pytest.mark.parametrize("queued", [False, True])
def test_big_copies_and_fills_are_exact(host: ol.DeviceHandle, queued: bool) -> None:
    size = (9 << 20) + 13
    a = ol.olMemAlloc(host, ol.AllocType.DEVICE, size)
    b = ol.olMemAlloc(host, ol.AllocType.DEVICE, size)
    queue = ol.olCreateQueue(host) if queued else None
    pattern = b"\x01\x02\x03\x04"
    fill = size - size % 4
    ol.olMemFill(queue, a, pattern, fill)
    ctypes.memset(a + fill, 0xEE, size - fill)
    ol.olMemcpy(queue, b, host, a, host, size)
    if queue is not None:
        ol.olSyncQueue(queue)
    data = ctypes.string_at(b, size)
    assert data[:fill] == pattern * (fill // 4) and data[fill:] == b"\xee" * (size - fill)
    # overlapping ranges fall back to one memmove
    ol.olMemcpy(queue, a + (1 << 20), host, a, host, 8 << 20)
    if queue is not None:
        ol.olSyncQueue(queue)
        ol.olDestroyQueue(queue)
    assert ctypes.string_at(a + (1 << 20), 8 << 20) == data[: 8 << 20]
    ol.olMemFree(a)
    ol.olMemFree(b)


@pytest.mark.parametrize("queued", [False, True])
@pytest.mark.parametrize("size", [(16 << 20) - 1, (16 << 20) + 77], ids=["below-streaming", "streamed"])
@pytest.mark.parametrize("offsets", [(0, 0), (3, 7), (15, 1)], ids=["aligned", "dst+3,src+7", "dst+15,src+1"])
def test_copies_past_the_streaming_size_are_exact_at_any_alignment(host: ol.DeviceHandle, queued: bool, size: int, offsets: tuple[int, int]) -> None:
    """From 16 MiB a copy of ranges that do not overlap uses streaming stores (_native.c
    stream_copy: an unaligned head, 64-byte blocks, a tail); every byte lands, nothing around it."""
    dst_offset, src_offset = offsets
    span = size + 64
    src = ol.olMemAlloc(host, ol.AllocType.HOST, span)
    dst = ol.olMemAlloc(host, ol.AllocType.DEVICE, span)
    pattern = bytes((i * 131 + 7) % 251 for i in range(4093))  # a prime length: no block lines up
    data = (pattern * (span // len(pattern) + 1))[:span]
    ctypes.memmove(src, data, span)
    ctypes.memset(dst, 0xA5, span)
    queue = ol.olCreateQueue(host) if queued else None
    ol.olMemcpy(queue, dst + dst_offset, host, src + src_offset, host, size)
    if queue is not None:
        ol.olSyncQueue(queue)
        ol.olDestroyQueue(queue)
    out = ctypes.string_at(dst, span)
    assert out[dst_offset : dst_offset + size] == data[src_offset : src_offset + size]
    assert out[:dst_offset] == b"\xa5" * dst_offset and out[dst_offset + size :] == b"\xa5" * (span - dst_offset - size)
    ol.olMemFree(src)
    ol.olMemFree(dst)


# --- churn ---------------------------------------------------------------------------------------


def test_queue_churn_with_native_work_stays_bounded(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    """create + launch + destroy, OFFLOAD_TEST_QUEUE_CHURN times (1M unless set: about 10 s)."""
    count = int(os.environ.get("OFFLOAD_TEST_QUEUE_CHURN", "1000000"))
    args, bump = struct.pack("P", word), kernels["bump"]
    create, launch, destroy = ol.olCreateQueue, ol.olLaunchKernel, ol.olDestroyQueue
    for _ in range(2000):
        q = create(host)
        launch(q, host, bump, args, ONE)
        destroy(q)
    rss_before, tasks_before = rss_kib(), _tasks()
    peak_parked = peak_tasks = 0
    for i in range(count):
        q = create(host)
        launch(q, host, bump, args, ONE)
        destroy(q)
        if i % 1000 == 0:
            peak_parked = max(peak_parked, len(host.parked))
            peak_tasks = max(peak_tasks, _tasks())
    q = create(host)
    ol.olSyncQueue(q)
    destroy(q)
    deadline = time.monotonic() + 10
    while any(_native.Queue.pending(p) for p in host.parked) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _u32(word) == count + 2000, "a launch was lost"
    assert peak_parked <= 1024, f"parked queues grew to {peak_parked}"
    assert peak_tasks <= tasks_before + 4, f"threads grew from {tasks_before} to {peak_tasks}"
    assert rss_kib() - rss_before < 64 * 1024, "RSS grew by more than 64 MiB"


@pytest.mark.parametrize("pattern", [b"\x07", b"abc", bytes(range(64)), bytes(range(200)) * 7])
def test_big_fills_of_any_pattern_length_are_exact(host: ol.DeviceHandle, pattern: bytes) -> None:
    size = len(pattern) * ((5 << 20) // len(pattern) + 1)
    address = ol.olMemAlloc(host, ol.AllocType.DEVICE, size)
    queue = ol.olCreateQueue(host)
    ol.olMemFill(queue, address, pattern, size)
    ol.olSyncQueue(queue)
    assert ctypes.string_at(address, size) == pattern * (size // len(pattern))
    ctypes.memset(address, 0, size)
    ol.olMemFill(None, address, pattern, size)
    assert ctypes.string_at(address, size) == pattern * (size // len(pattern))
    ol.olDestroyQueue(queue)
    ol.olMemFree(address)


# --- executor turns, recycled op nodes, launch-size parsing ------------------------------------


def test_many_submitters_many_queues_every_op_runs_once(host: ol.DeviceHandle, kernels: dict) -> None:
    """Submitting threads on queues of their own while the executor runs them and gives their op
    nodes back (lock-free): every launch runs exactly once, in order per queue."""
    threads_count, per_thread, bump = 4, 20000, kernels["bump"]
    counters = [ol.olMemAlloc(host, ol.AllocType.DEVICE, 8) for _ in range(threads_count)]
    for address in counters:
        ctypes.memset(address, 0, 8)
    failures: list[BaseException] = []

    def submit(counter: int) -> None:
        try:
            q, args = ol.olCreateQueue(host), struct.pack("P", counter)
            for i in range(per_thread):
                ol.olLaunchKernel(q, host, bump, args, ONE)
                if i % 997 == 0:  # a pause now and then: the executor takes its turns meanwhile
                    time.sleep(0.0002)
            ol.olSyncQueue(q)
            ol.olDestroyQueue(q)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    workers = [threading.Thread(target=submit, args=(c,)) for c in counters]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    try:
        assert not failures, failures
        assert [_u32(c) for c in counters] == [per_thread] * threads_count
    finally:
        for address in counters:
            ol.olMemFree(address)


def test_work_submitted_during_an_executor_turn_runs_without_a_sync(host: ol.DeviceHandle, kernels: dict, word: int) -> None:
    """The executor takes the ops queued when its turn starts; what arrives meanwhile gets a turn
    of its own, with nobody syncing."""
    q, args = ol.olCreateQueue(host), struct.pack("P", word)
    try:
        for burst in range(1, 6):
            for _ in range(300):
                ol.olLaunchKernel(q, host, kernels["bump"], args, ONE)
            deadline = time.monotonic() + 10
            while _u32(word) < 300 * burst and time.monotonic() < deadline:
                time.sleep(0.0005)
            assert _u32(word) == 300 * burst
        assert not _native.Queue.pending(q.native)
    finally:
        ol.olDestroyQueue(q)


def test_launch_sizes_are_parsed_per_object(host: ol.DeviceHandle) -> None:
    """The native side keeps the grid of the last size object it saw: alternating objects, and a
    new object after the old one is gone, each launch their own grid."""
    program = ol.olCreateProgram(host, build_program(GRID_KERNEL, name="grid_count"))
    kernel = ol.olGetSymbol(program, "count_groups", ol.SymbolKind.KERNEL)
    out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 8)
    q = ol.olCreateQueue(host)
    try:
        args = struct.pack("P", out)
        sizes = [ol.KernelLaunchSizeArgs(3, (gx, 2, 1), (1, 1, 3)) for gx in (1, 5, 9)]
        for queue in (None, q):
            for size in sizes * 3 + [ol.KernelLaunchSizeArgs(1, (g, 1, 1), (1, 1, 1)) for g in (3, 7)]:
                ctypes.memset(out, 0, 8)
                ol.olLaunchKernel(queue, host, kernel, args, size)
                if queue is not None:
                    ol.olSyncQueue(queue)
                assert ctypes.c_uint64.from_address(out).value == size.total_groups * size.group_items
    finally:
        ol.olDestroyQueue(q)
        ol.olMemFree(out)
        ol.olDestroyProgram(program)


GRID_KERNEL = r"""
#include <offload_host.h>
#include <stdint.h>
struct grid_args { uint64_t *out; };
OFFLOAD_KERNEL_PARAMS(count_groups, struct grid_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(count_groups) {
  const offload_group_t *g = OFFLOAD_GROUP;
  __atomic_fetch_add(OFFLOAD_ARGS(struct grid_args)->out,
                     (uint64_t)g->group_size.x * g->group_size.y * g->group_size.z, __ATOMIC_RELAXED);
}
"""


def test_launch_sizes_are_immutable() -> None:
    size = ol.KernelLaunchSizeArgs(1, (4, 1, 1), (8, 1, 1))
    for name, value in (("num_groups", ol.Dimensions(1, 1, 1)), ("dyn_shared_memory", 64), ("checked_for", None)):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(size, name, value)
    with pytest.raises(AttributeError, match="immutable"):
        del size.group_size
    assert size.num_groups == (4, 1, 1) and size.group_items == 8


def test_big_allocations_are_huge_page_aligned_and_fully_unmapped(host: ol.DeviceHandle) -> None:
    """From 2 MiB on an allocation starts on a 2 MiB boundary (advised for transparent huge
    pages); freeing it unmaps every page, the alignment slack included."""
    sizes = (2 << 20, (5 << 20) + 123, 64 << 20)
    addresses = [ol.olMemAlloc(host, kind, size) for kind in (ol.AllocType.DEVICE, ol.AllocType.HOST) for size in sizes]
    try:
        for address, size in zip(addresses, sizes * 2):
            assert address % (2 << 20) == 0
            ctypes.memset(address, 0x5A, size)
            assert ctypes.string_at(address + size - 1, 1) == b"\x5a"
    finally:
        for address in addresses:
            ol.olMemFree(address)
    # every page is unmapped again, the alignment slack included: the address space stays flat
    before = _vm_size_kib()
    for _ in range(200):
        ol.olMemFree(ol.olMemAlloc(host, ol.AllocType.DEVICE, (3 << 20) + 5))
    assert _vm_size_kib() - before < 64 * 1024


def _vm_size_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
