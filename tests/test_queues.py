"""Queues on the host device: real asynchrony, parking and reuse, churn without leaks, threads."""

from __future__ import annotations

import ctypes
import gc
import threading
import time

import pytest

import offload as ol
from helpers import rss_kib, run_in_threads


def test_work_is_really_asynchronous_and_in_order(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    gate, started = threading.Event(), threading.Event()
    order: list[int] = []
    ol.olLaunchHostFunction(queue, lambda _: (started.set(), gate.wait(5)))
    for i in range(5):
        ol.olLaunchHostFunction(queue, order.append, i)
    assert ol.olGetQueueInfo(queue, ol.QueueInfo.EMPTY) is False
    assert ol.olQueryQueue(queue) is False
    assert started.wait(10), "the first host function never ran"  # the queue reached the gate
    assert order == [], "work ran before the blocking host function finished"
    gate.set()
    ol.olSyncQueue(queue)
    assert order == [0, 1, 2, 3, 4]
    assert ol.olQueryQueue(queue) is True
    ol.olDestroyQueue(queue)


def test_host_to_host_copy_is_ordered_on_the_queue(host: ol.DeviceHandle) -> None:
    src = ol.olMemAlloc(host, ol.AllocType.HOST, 8)
    dst = ol.olMemAlloc(host, ol.AllocType.HOST, 8)
    ctypes.memmove(src, b"ABCDEFGH", 8)
    ctypes.memset(dst, 0, 8)
    queue = ol.olCreateQueue(host)
    gate, started = threading.Event(), threading.Event()
    ol.olLaunchHostFunction(queue, lambda _: (started.set(), gate.wait(5)))
    ol.olMemcpy(queue, dst, host, src, host, 8)
    assert started.wait(10), "the host function never ran"  # the queue reached the gate
    assert ctypes.string_at(dst, 8) == b"\0" * 8
    gate.set()
    ol.olSyncQueue(queue)
    assert ctypes.string_at(dst, 8) == b"ABCDEFGH"
    ol.olDestroyQueue(queue)
    ol.olMemFree(src)
    ol.olMemFree(dst)


def test_busy_queue_is_parked_then_reused(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    gate = threading.Event()
    ol.olLaunchHostFunction(queue, lambda _: gate.wait(5))
    native = queue.native
    event = ol.olCreateEvent(queue)
    ol.olDestroyQueue(queue)
    assert host.parked == [native]
    # events outlive their queue
    assert ol.olGetEventInfo(event, ol.EventInfo.QUEUE) is queue
    assert ol.olGetEventInfo(event, ol.EventInfo.IS_COMPLETE) is False
    busy = ol.olCreateQueue(host)  # the parked one is still busy: a new queue
    assert busy.native is not native
    gate.set()
    ol.olSyncEvent(event)
    reused = ol.olCreateQueue(host)
    assert reused.native is native and host.parked == []
    for q in (busy, reused):
        ol.olDestroyQueue(q)


def test_idle_queue_is_released_at_once(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    ol.olLaunchHostFunction(queue, lambda _: None)
    ol.olSyncQueue(queue)
    threads = threading.active_count()
    ol.olDestroyQueue(queue)
    assert host.parked == []
    assert threading.active_count() == threads - 1, "the idle queue's worker thread must end"


def test_async_errors_surface_at_synchronize(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)

    def explode(_: object) -> None:
        raise ValueError("callback failed")

    ran = []
    ol.olLaunchHostFunction(queue, explode)
    ol.olLaunchHostFunction(queue, ran.append, "after")
    with pytest.raises(ol.OffloadError) as info:
        ol.olSyncQueue(queue)
    assert "callback failed" in str(info.value) and isinstance(info.value.__cause__, ValueError)
    assert ran == ["after"]
    ol.olSyncQueue(queue)  # reported once
    ol.olDestroyQueue(queue)


def test_queue_churn_with_pending_work_stays_bounded(host: ol.DeviceHandle) -> None:
    """100k create/enqueue/destroy cycles: parked queues, threads and memory stay bounded."""
    noop = lambda _: None  # noqa: E731
    for _ in range(2000):  # warm up allocator and caches before measuring
        q = ol.olCreateQueue(host)
        ol.olLaunchHostFunction(q, noop)
        ol.olDestroyQueue(q)
    gc.collect()
    rss_before, threads_before = rss_kib(), threading.active_count()
    peak_parked = peak_threads = 0
    for i in range(100_000):
        q = ol.olCreateQueue(host)
        ol.olLaunchHostFunction(q, noop)
        ol.olDestroyQueue(q)
        if i % 1000 == 0:
            peak_parked = max(peak_parked, len(host.parked))
            peak_threads = max(peak_threads, threading.active_count())
    gc.collect()
    grown = rss_kib() - rss_before
    assert peak_parked <= 64, f"parked list grew to {peak_parked}"
    assert peak_threads <= threads_before + 64, f"threads grew to {peak_threads}"
    assert grown < 32 * 1024, f"RSS grew by {grown} KiB over 100k queues"
    assert len(host.queues) == 0


def test_twenty_threads_share_one_queue(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    counts = [0] * 20
    lock = threading.Lock()

    def bump(i: int) -> None:
        with lock:
            counts[i] += 1

    def worker(i: int) -> None:
        for _ in range(200):
            ol.olLaunchHostFunction(queue, bump, i)
        ol.olSyncQueue(queue)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ol.olSyncQueue(queue)
    assert counts == [200] * 20
    ol.olDestroyQueue(queue)


def test_twenty_threads_churn_queues_and_memory(host: ol.DeviceHandle) -> None:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(100):
                q = ol.olCreateQueue(host)
                ptr = ol.olMemAlloc(host, ol.AllocType.DEVICE, 64)
                ol.olMemFill(q, ptr, b"\x07", 64)
                e = ol.olCreateEvent(q)
                ol.olSyncEvent(e)
                assert ctypes.string_at(ptr, 64) == b"\x07" * 64
                ol.olDestroyEvent(e)
                ol.olDestroyQueue(q)
                ol.olMemFree(ptr)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    run_in_threads(worker, 20)
    assert not errors, errors[:3]


def test_elapsed_time_measures_real_work(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    start = ol.olCreateEvent(queue)
    ol.olLaunchHostFunction(queue, lambda _: time.sleep(0.05))
    end = ol.olCreateEvent(queue)
    ol.olSyncEvent(end)
    elapsed = ol.olGetEventElapsedTime(start, end)
    assert 45.0 <= elapsed < 2000.0
    ol.olDestroyQueue(queue)


def test_host_function_cannot_deadlock_on_its_own_queue(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    seen: list[ol.ErrorCode] = []

    def sync_self(_: object) -> None:
        try:
            ol.olSyncQueue(queue)
        except ol.OffloadError as error:
            seen.append(error.code)

    ol.olLaunchHostFunction(queue, sync_self)
    ol.olSyncQueue(queue)
    assert seen == [ol.ErrorCode.INVALID_QUEUE]
    ol.olDestroyQueue(queue)
