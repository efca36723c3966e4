"""How bench_cuda and its sections (``_cuda_peers``, ``_cuda_pool``) hold a stream while they
time what they enqueue on it.

A hold is a host function at the head of the stream (or queue) that waits on one gate; the
operations timed are enqueued behind it, in batches that stay under the driver's push buffer
(about 1024 pending operations per stream on NVIDIA drivers, ``GPUSIM_PUSH_BUFFER`` on the
simulator: past it the enqueuing call blocks until the device drains work, which a held stream
never does). The release opens the gate and synchronises, off the clock, even when an enqueue
failed. A failed raw driver call raises ``DriverError``: bench_cuda then stops with exit status 2.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import offload

__all__ = ["DRIVER_PUSH_BUFFER", "DriverError", "Gate", "Gated", "batch_size", "batches", "check", "held"]

#: Pending operations per stream a real driver accepts before enqueuing blocks (an order of
#: magnitude, not a documented figure); the simulator's is GPUSIM_PUSH_BUFFER.
DRIVER_PUSH_BUFFER = 1024
REAL = os.environ.get("OFFLOAD_CUDA_REAL") == "1"

Gated = tuple[Callable[[], None], Callable[[], None]]  # hold, release


class DriverError(RuntimeError):
    """A raw driver call of the benchmark failed (its CUresult is the message)."""


def check(returned: Any) -> Any:
    """A cuda.bindings call's values without its CUresult (None, one value or a tuple);
    ``DriverError`` when the CUresult is an error."""
    if returned[0]:
        raise DriverError(f"driver call failed: {returned[0]!r}")
    return None if len(returned) == 1 else returned[1] if len(returned) == 2 else returned[1:]


def batch_size(push_buffer: int | None = None) -> int:
    """Operations enqueued behind one hold: half the push buffer (the hold itself and any
    bookkeeping the queue adds take slots too), never more than 512."""
    if push_buffer is None:
        text = os.environ.get("GPUSIM_PUSH_BUFFER", "")
        push_buffer = int(text) if text.isdigit() and not REAL else DRIVER_PUSH_BUFFER
    return max(1, min(512, push_buffer // 2))


def batches(n: int, size: int) -> list[int]:
    """``n`` split into batches of at most ``size`` (the last one may be shorter)."""
    return [min(size, n - start) for start in range(0, n, size)]


def held(gated: Gated, enqueue: Callable[[int], None], n: int, batch: int) -> float:
    """Mean ns per operation of ``enqueue(count)`` over batches of ``n`` of at most ``batch``,
    each behind a hold; the hold is released even when an enqueue fails."""
    hold, release = gated
    elapsed = 0
    for count in batches(n, batch):
        hold()
        try:
            start = time.perf_counter_ns()
            enqueue(count)
            elapsed += time.perf_counter_ns() - start
        finally:
            release()
    return elapsed / n


class Gate:
    """The event that every held stream and queue of a run waits on (one hold at a time), and
    the C host function waiting on it that raw ``cuLaunchHostFunc`` enqueues."""

    def __init__(self) -> None:
        event = self.event = threading.Event()
        self._host_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: event.wait(300) and None)
        self.host_fn_address: int = ctypes.cast(self._host_fn, ctypes.c_void_p).value  # type: ignore[assignment]

    def _released_by(self, sync: Callable[[], object]) -> Callable[[], None]:
        event = self.event

        def release() -> None:
            event.set()
            sync()

        return release

    def stream(self, driver: Any, stream: Any, sync: Callable[[], object] | None = None) -> Gated:
        """A raw stream (cuda.bindings' ``CUstream``, or cuda.core's ``Stream.handle``) held by
        ``cuLaunchHostFunc``; released by ``sync`` (default: a checked ``cuStreamSynchronize``)."""
        event, host_fn = self.event, driver.CUhostFn(self.host_fn_address)

        def hold() -> None:
            event.clear()
            check(driver.cuLaunchHostFunc(stream, host_fn, 0))

        return hold, self._released_by(sync or (lambda: check(driver.cuStreamSynchronize(stream))))

    def queue(self, queue: Any) -> Gated:
        """A flat-API queue held by ``olLaunchHostFunction``, released by ``olSyncQueue``."""
        event = self.event

        def hold() -> None:
            event.clear()
            offload.olLaunchHostFunction(queue, lambda _: event.wait(300) and None, None)

        return hold, self._released_by(lambda: offload.olSyncQueue(queue))

    def objects_queue(self, queue: Any) -> Gated:
        """An object-layer ``Queue`` held by ``queue.host_function``, released by ``queue.sync``."""
        event = self.event

        def hold() -> None:
            event.clear()
            queue.host_function(event.wait, 300)

        return hold, self._released_by(queue.sync)
