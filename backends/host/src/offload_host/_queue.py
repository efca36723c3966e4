"""Asynchronous in-order queues and events of the host device.

A queue runs its operations, in submission order, on one worker thread of its own. The thread
starts at the first submission (a queue that never gets work costs no thread) and is joined when
the queue is released, so no thread outlives the queue. Exceptions raised by operations are kept
and raised by the next ``synchronize``; later operations still run, so events always complete.
"""

from __future__ import annotations

import itertools
import queue as _stdqueue
import threading
import time
from collections.abc import Callable
from typing import Any

_names = itertools.count(1)
_RELEASE = None  # the sentinel that ends a worker


class HostEvent:
    """Complete once every operation submitted before it has run; stamped when reached."""

    __slots__ = ("_done", "timestamp_ns")

    def __init__(self) -> None:
        self._done = threading.Event()
        self.timestamp_ns = 0

    def complete(self) -> None:
        self.timestamp_ns = time.perf_counter_ns()
        self._done.set()

    def is_complete(self) -> bool:
        return self._done.is_set()

    def wait(self) -> None:
        self._done.wait()


class HostQueue:
    """An in-order queue of callables, executed by a lazily started worker thread."""

    __slots__ = ("_ops", "_lock", "_submitted", "_completed", "_thread", "_errors", "name")

    def __init__(self) -> None:
        self._ops: _stdqueue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = _stdqueue.SimpleQueue()
        self._lock = threading.Lock()
        self._submitted = 0
        self._completed = 0  # written by the worker only
        self._thread: threading.Thread | None = None
        self._errors: list[BaseException] = []
        self.name = f"offload-host-queue-{next(_names)}"

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Enqueue ``fn(*args)`` after everything submitted so far."""
        with self._lock:
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._ops.put((fn, args))

    def has_pending_work(self) -> bool:
        return self._completed != self._submitted

    def _work(self) -> None:
        get = self._ops.get
        while True:
            op = get()
            if op is _RELEASE:
                return
            fn, args = op
            try:
                fn(*args)
            except BaseException as exc:  # reported by the next synchronize
                self._errors.append(exc)
            self._completed += 1

    def synchronize(self, release: bool) -> None:
        """Wait for every submitted operation; with ``release`` also end the worker thread.

        Raises the first error kept since the last synchronize (the rest are its context).
        """
        if threading.current_thread() is self._thread:
            from offload import ErrorCode, OffloadError

            raise OffloadError(
                ErrorCode.INVALID_QUEUE, f"a host function on {self.name} cannot wait for its own queue (it would never finish)"
            )
        if self._completed != self._submitted:
            reached = threading.Lock()
            reached.acquire()
            self.submit(reached.release)
            reached.acquire()
        if release:
            with self._lock:
                thread, self._thread = self._thread, None
            if thread is not None:
                self._ops.put(_RELEASE)
                thread.join()
        self._raise_errors()

    def _raise_errors(self) -> None:
        if not self._errors:
            return
        errors, self._errors = self._errors, []
        from offload import ErrorCode, OffloadError

        first = errors[0]
        if isinstance(first, OffloadError):
            raise first
        error = OffloadError(
            ErrorCode.UNKNOWN,
            f"{len(errors)} operation(s) on {self.name} failed; first: {type(first).__name__}: {first}",
        )
        raise error from first

    def record(self) -> HostEvent:
        """An event that completes when the work submitted so far is done."""
        event = HostEvent()
        if self._completed == self._submitted:
            event.complete()
        else:
            self.submit(event.complete)
        return event
