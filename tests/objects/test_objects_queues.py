"""Queues and events as objects: with blocks, events with elapsed time, host functions, waits
across queues, and queues that keep their work's objects alive."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import offload
from offload import ErrorCode, OffloadError
from offload._core.session import STATE


def test_with_block_syncs_then_destroys(device: offload.objects.Device) -> None:
    ran = threading.Event()
    with device.queue() as queue:
        queue.host_function(lambda: (time.sleep(0.05), ran.set()))
        handle = queue.handle
    assert ran.is_set()  # synchronised on leaving the block
    assert queue.closed and handle._ctx is None
    queue.close()  # idempotent
    with pytest.raises(OffloadError) as info:
        queue.sync()
    assert info.value.code is ErrorCode.INVALID_QUEUE


def test_host_functions_run_in_order_with_arguments(device: offload.objects.Device) -> None:
    seen: list[int] = []
    with device.queue() as queue:
        for i in range(20):
            queue.host_function(seen.append, i)
    assert seen == list(range(20))


def test_host_function_error_fails_the_sync(device: offload.objects.Device) -> None:
    queue = device.queue()
    queue.host_function(lambda: 1 / 0)
    with pytest.raises(OffloadError):
        queue.sync()
    queue.close()


def test_block_exception_wins_over_close(device: offload.objects.Device) -> None:
    with pytest.raises(KeyError):
        with device.queue() as queue:
            queue.host_function(lambda: 1 / 0)
            raise KeyError("mine")
    assert queue.closed


def test_events_and_elapsed_time(device: offload.objects.Device) -> None:
    with device.queue() as queue:
        start = queue.record()
        queue.host_function(time.sleep, 0.02)
        end = queue.record()
        end.sync()
        assert start.is_complete and end.is_complete
        assert end.queue is queue
        elapsed = start.elapsed_time(end)
        assert elapsed >= 15.0  # milliseconds
        with end:
            pass
    with pytest.raises(OffloadError):
        end.sync()


def test_wait_across_queues(device: offload.objects.Device) -> None:
    gate = threading.Event()
    order: list[str] = []
    with device.queue() as first, device.queue() as second:
        first.host_function(lambda: (gate.wait(5), order.append("first")))
        done = first.record()
        second.wait(done)
        second.host_function(order.append, "second")
        assert not second.is_idle
        gate.set()
        second.sync()
        assert order == ["first", "second"]
        assert second.is_idle


def test_queue_keeps_objects_alive_until_sync(device: offload.objects.Device) -> None:
    gate = threading.Event()
    with device.queue() as queue:
        queue.host_function(gate.wait, 5)
        buffer = device.alloc(4096)
        queue.copy(buffer, np.full(1024, 3, np.int32))
        del buffer  # still referenced by the queue's pending copy
        gc.collect()
        assert STATE.ctx is not None and len(STATE.ctx.allocations) == 1
        gate.set()
        queue.sync()
        gc.collect()
        assert len(STATE.ctx.allocations) == 0


def test_gc_of_a_busy_queue_waits_for_its_work(device: offload.objects.Device) -> None:
    gate = threading.Event()
    done = threading.Event()
    queue = device.queue()
    buffer = device.alloc(64)
    queue.host_function(gate.wait, 5)
    queue.fill(buffer, b"\x07")
    queue.host_function(done.set)
    del buffer
    threading.Timer(0.05, gate.set).start()
    del queue
    gc.collect()  # the finalizer synchronises before destroying, since work holds objects
    assert done.is_set()
    assert STATE.ctx is not None and len(STATE.ctx.allocations) == 0


def test_copy_between_any_endpoints(device: offload.objects.Device) -> None:
    data = np.arange(256, dtype=np.uint8)
    with device.alloc(256) as a, device.alloc(256) as b, device.queue() as queue:
        queue.copy(a, data)
        queue.copy(b, a)
        out = bytearray(256)
        queue.copy(out, b)
        queue.sync()
        assert out == data.tobytes()
        with pytest.raises(OffloadError) as info:
            queue.copy(a, bytes(512))
        assert info.value.code is ErrorCode.INVALID_SIZE
