"""Asynchronous in-order queues and events of the host device.

The queue itself is native (``_native.Queue``, see ``_hostq.c``): launches, copies, fills, event
records and event waits are kept and run in C without the GIL, by the device's executor thread
or by a thread waiting for them; host functions are handed, in queue order, to the queue's worker
thread, which takes the GIL only to run them. This module adds the Python parts: starting the
worker thread (when the native queue asks for one), the release protocol (no thread outlives a
released queue; a host function releasing its own queue detaches instead), and turning kept
errors into exceptions.

Errors: every error kept since the last synchronize is raised by the next one (or by the sync of
a later event): a single ``OffloadError`` for one, an ``ExceptionGroup`` of ``OffloadError`` for
several, none dropped.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from offload import ErrorCode, OffloadError
from offload.backend.support import raise_kept_errors

from ._native import Event as NativeEvent, Queue as NativeQueue, QueueReleased

HostEvent = NativeEvent
QueueReleased = QueueReleased

_names = itertools.count(1)


def _join(thread: threading.Thread) -> None:
    """Join ``thread`` even when the wait is interrupted (Ctrl-C); the interrupt is raised after."""
    interrupt: BaseException | None = None
    while True:
        try:
            thread.join()
            break
        except BaseException as exc:
            interrupt = exc
    if interrupt is not None:
        raise interrupt


def _running(thread: threading.Thread) -> bool:
    """Whether ``thread``'s OS thread was created, though ``start()`` raised (an interrupt)."""
    started: threading.Event | None = getattr(thread, "_started", None)  # CPython's start handshake
    return started.wait(1.0) if started is not None else thread.is_alive()


class HostQueue(NativeQueue):
    """An in-order queue: native work runs in C; host functions on a worker thread, in order."""

    __slots__ = ("name", "_thread")

    def __init__(self, executor: int | None = None, pool: int | None = None) -> None:
        super().__init__(executor, pool)  # pool: its device's fault refuses work and fails syncs
        self.name = f"offload-host-queue-{next(_names)}"
        self._thread: threading.Thread | None = None

    def start_worker(self) -> None:
        """Start the worker thread; called once, by the submitter the native queue told to."""
        thread = threading.Thread(target=self.work, name=self.name, daemon=True)
        self._thread = thread
        try:
            thread.start()
        except BaseException:
            if not _running(thread):  # else (Ctrl-C while start() waited) it serves the queue
                self._thread = None
                self.worker_failed()  # the next submission asks again
            raise

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Enqueue the host function ``fn(*args)`` after everything submitted so far."""
        if self.call(fn if not args else lambda: fn(*args)):
            self.start_worker()

    def has_pending_work(self) -> bool:
        return self.pending()

    def synchronize(self, release: bool) -> None:
        """Wait for every submitted operation, then raise the errors kept since the last sync.

        With ``release`` the queue takes no more work and its worker thread is joined. Called by a
        host function of this very queue, ``release`` detaches instead: the operations not yet
        started are dropped and the worker ends right after that host function; without
        ``release`` that call fails with INVALID_QUEUE (it would wait for itself). Interrupted
        (Ctrl-C) while waiting with ``release``, the queue drops what has not started and is
        still released before the interrupt propagates.
        """
        if self.on_worker():
            if not release:
                raise OffloadError(
                    ErrorCode.INVALID_QUEUE,
                    f"a host function on {self.name} cannot wait for its own queue (it would never finish)",
                )
            self.raise_errors(self.release(True))
            return
        if not release:
            errors = self.sync()
            if errors:
                self.raise_errors(errors)
            return
        try:
            kept = self.drain() or []  # a faulted device's fault only if this queue kept it
        except BaseException:
            self._finish(discard=True)
            raise
        self.raise_errors(kept + self._finish(discard=False))

    def _finish(self, discard: bool) -> list[BaseException]:
        """Release the native queue and join the worker thread, whatever interrupts the join."""
        try:
            errors = self.release(discard) or []
        finally:  # release() returned only once work() has: only the thread's own exit is left
            thread, self._thread = self._thread, None
            if thread is not None and thread is not threading.current_thread():
                _join(thread)
        return errors

    def raise_errors(self, errors: list[BaseException] | None) -> None:
        """Raise kept errors: one OffloadError for one, an ExceptionGroup of them for several."""
        raise_kept_errors(errors or (), f"an operation on {self.name}", f"operations on {self.name}")

    def record(self) -> HostEvent:  # type: ignore[override]
        """An event that completes when the work submitted so far is done."""
        event, start = super().record()
        if start:
            self.start_worker()
        return event
