"""The host backend's native queues: native and host-function work in queue order, waiters that
run the work themselves, errors raised once at the right sync, executor turns, launch sizes."""

from __future__ import annotations

import ctypes
import struct
import threading
import time

import pytest

import offload as ol
from offload_host import _native, build_program
from offload_host._queue import HostQueue

from native_queue_support import ONE, u32 as _u32


def _all_errors(error: BaseException) -> list[BaseException]:
    """Every error a sync raised: joined in ``.errors`` by the core, or in the group it mapped."""
    assert isinstance(error, ol.OffloadError)
    if len(error.errors) > 1:
        return list(error.errors)
    if isinstance(error.__cause__, BaseExceptionGroup):
        return list(error.__cause__.exceptions)
    return [error]


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
