"""Stream-ordered memory on the host device, through the core's pool (issue 32, part 3): a block
freed on a queue comes back when the queue reaches the free (not before: a gate holds the queue),
is refused by every range check meanwhile and while pooled, and is handed out again to an
allocation of its size; the final olShutDown gives pooled blocks back."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

import offload as ol


def test_blocks_come_back_in_queue_order_and_are_reused(host: ol.DeviceHandle) -> None:
    queue, other = ol.olCreateQueue(host), ol.olCreateQueue(host)
    a = ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 4096)
    assert ol.olGetMemInfo(a, ol.MemInfo.SIZE) == 4096
    gate = threading.Event()
    ol.olLaunchHostFunction(queue, lambda _: gate.wait(10))
    ol.olMemFill(queue, a, b"\x11", 4096)
    ol.olMemFreeAsync(queue, a)
    with pytest.raises(ol.OffloadError) as refused:  # retired at once, though the queue has not reached the free
        ol.olMemFill(None, a, b"\x22", 8)
    assert refused.value.code is ol.ErrorCode.INVALID_ARGUMENT
    b = ol.olMemAllocAsync(other, ol.AllocType.DEVICE, 4096)
    assert b != a  # another queue: its work is not ordered after the free
    c = ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 4096)
    assert c == a  # the same queue: every earlier use comes before its later work
    ol.olMemFreeAsync(queue, c)
    ol.olDestroyQueue(queue)  # what it kept goes to the device's pool once it reaches the free
    with pytest.raises(ol.OffloadError):  # still refused meanwhile
        ol.olMemcpy(None, a, host, b, host, 8)
    assert ol.olMemAllocAsync(other, ol.AllocType.DEVICE, 4096) != a
    gate.set()
    ol.olSyncQueue(other)
    deadline = time.monotonic() + 10
    while len(host.pool) == 0 and time.monotonic() < deadline:  # the destroyed queue finishes on its own
        time.sleep(0.01)
    d = ol.olMemAllocAsync(other, ol.AllocType.DEVICE, 4096)
    assert d == a  # from the device's pool, on another queue
    ol.olMemFill(None, d, b"\x33", 4096)
    assert ctypes.string_at(d, 4) == b"\x33" * 4
    assert ol.olMemAllocAsync(other, ol.AllocType.DEVICE, 100) not in (a, b)  # exact sizes only
    ol.olMemFreeAsync(other, d)
    ol.olSyncQueue(other)
    ol.olDestroyQueue(other)


def test_a_free_from_a_host_function_of_its_queue(host: ol.DeviceHandle) -> None:
    queue = ol.olCreateQueue(host)
    a = ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 256)
    errors: list[BaseException] = []

    def free(_: object) -> None:
        try:
            ol.olMemFreeAsync(queue, a)
        except BaseException as exc:  # noqa: B036 - reported below
            errors.append(exc)

    ol.olLaunchHostFunction(queue, free)
    ol.olSyncQueue(queue)
    assert errors == []
    assert ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 256) == a
    ol.olDestroyQueue(queue)


def test_pooled_blocks_are_given_back_at_shutdown(run_python) -> None:  # type: ignore[no-untyped-def]
    code = r"""
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = [d for d in found if d.is_host][0]
freed = []
backend = host.backend
real = backend.mem_free
backend.mem_free = lambda native, address, kind: (freed.append(address), real(native, address, kind))
q = ol.olCreateQueue(host)
blocks = [ol.olMemAllocAsync(q, ol.AllocType.DEVICE, 1000 + i) for i in range(3)]
for b in blocks:
    ol.olMemFreeAsync(q, b)
ol.olSyncQueue(q)
pooled = len(host.pool)
ol.olShutDown()
print(pooled, sorted(freed) == sorted(blocks))
"""
    assert run_python(code).stdout.split() == ["3", "True"]



def test_threads_allocating_and_freeing_on_their_queues(host: ol.DeviceHandle) -> None:
    """Four threads, each on its own queue, allocate, fill, copy back and free in queue order while
    one more frees synchronously: every copy sees its own thread's bytes (a block handed to two
    owners at once would mix them) and no call fails."""
    from helpers import run_in_threads

    errors: list[BaseException] = []
    seen: list[bool] = []
    counter = iter(range(1, 1000))
    lock = threading.Lock()

    def work() -> None:
        with lock:
            mark = next(counter)
        queue = ol.olCreateQueue(host)
        back = (ctypes.c_uint8 * 512)()
        try:
            for i in range(200):
                size = (64, 256, 512)[i % 3]
                address = ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, size)
                ol.olMemFill(queue, address, bytes([mark]), size)
                ol.olMemcpy(queue, ctypes.addressof(back), host, address, host, size)
                ol.olMemFreeAsync(queue, address)
                if i % 50 == 49:
                    ol.olSyncQueue(queue)
                    seen.append(bytes(back[:size]) == bytes([mark]) * size)
                if i % 7 == 0:
                    ol.olMemFree(ol.olMemAlloc(host, ol.AllocType.DEVICE, size))
            ol.olSyncQueue(queue)
        except BaseException as exc:  # noqa: B036 - reported below
            errors.append(exc)
        finally:
            ol.olDestroyQueue(queue)

    run_in_threads(work, 4)
    assert errors == [] and len(seen) == 16 and all(seen)


def test_a_reused_block_s_first_fill_is_replayed(host: ol.DeviceHandle) -> None:
    """Handing out a block its queue kept publishes the block's fill verdict (the fill rule of
    olMemFill, in the snapshot that made it live): its first fill on that queue runs in C, where
    the compiled path runs; a fill past its end still reaches Python, which refuses it."""
    queue = ol.olCreateQueue(host)
    a = ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 4096)
    ol.olMemFreeAsync(queue, a)
    counts = getattr(ol.olMemFill, "counts", None)  # (None: OFFLOAD_COMPILED=0)
    before = None if counts is None else counts["fast"]
    b = ol.olMemAllocAsync(queue, ol.AllocType.DEVICE, 4096)
    assert b == a
    ol.olMemFill(queue, b, b"\x5a", 4096)
    ol.olSyncQueue(queue)
    assert ctypes.string_at(b, 4096) == b"\x5a" * 4096
    if before is not None:
        assert ol.olMemFill.counts["fast"] == before + 1  # type: ignore[attr-defined]
    with pytest.raises(ol.OffloadError) as refused:
        ol.olMemFill(queue, b, b"\x5a", 4097)
    assert refused.value.code is ol.ErrorCode.INVALID_SIZE and "overruns" in str(refused.value)
    ol.olMemFreeAsync(queue, b)
    ol.olDestroyQueue(queue)
