"""An asynchronous device's queue: its operations (each one a synchronous request to the server)
run in order on a thread of the queue (``offload.backend.support.DeferredWork``), events are
markers on it, and host functions go through ``HostFunctions`` (so the releases asked from inside
one are deferred until it has returned)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from offload.backend.support import DeferredWork, HostFunctions, KeptErrors

_names = itertools.count()


class Queue(KeptErrors):
    """Operations run in order; an error is kept for the next sync, and once the queue is released
    (the final ``olShutDown``) what is still queued is dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.name = f"remote queue {next(_names)}"
        self.work = DeferredWork(self.name)

    def __repr__(self) -> str:
        return self.name

    def put(self, op: Callable[[], None]) -> None:
        self.work.submit([(self, lambda: None if self.released else op())])

    def pending(self) -> bool:
        return self.work.pending_for(self)

    def wait(self) -> None:
        self.work.wait(self)

    def close(self) -> None:
        self.released = True


class Marker:
    """An event: complete once its queue reached it; the errors kept before it are its own."""

    def __init__(self, queue: Queue) -> None:
        self.done = threading.Event()
        self.errors: list[BaseException] = []
        self.at = 0
        self.queue = queue
        queue.put(self._reached)

    def _reached(self) -> None:
        self.at = time.perf_counter_ns()
        self.errors, self.queue._kept[:] = self.queue._kept[:], []
        self.done.set()


class QueueCalls(HostFunctions):
    """Host functions as operations of the queue (no driver callback: ``run_host_function``)."""

    def launch_host_function(self, queue: Any, address: int, key: int) -> None:
        queue.put(lambda: self.run_host_function(key))
