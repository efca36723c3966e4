"""The host backend's native queues and memory: big copies and fills split over the pool (any
alignment, any pattern length), queue churn staying bounded, huge-page-aligned big allocations."""

from __future__ import annotations

import ctypes
import os
import struct
import time

import pytest

import offload as ol
from offload_host import _native

from helpers import rss_kib
from native_queue_support import ONE, u32 as _u32


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


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
