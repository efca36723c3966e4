"""Host functions run by a driver's C callback (``cuLaunchHostFunc``, ``hipLaunchHostFunc``):
``HostFunctions``, and the work deferred out of one (``DeferredWork``, ``off_thread``). Backend
authors find them in ``offload.backend.support``, which re-exports them (its docstring says what
a backend does with them).
"""

from __future__ import annotations

import collections
import ctypes
import itertools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._values.enums import ErrorCode
from .._values.errors import OffloadError

__all__ = ["DeferredWork", "HostFunctions", "off_thread"]

T = TypeVar("T")


# --- work deferred out of a host function ----------------------------------------------------

Job = tuple[Any, Callable[[], None]]  # (queue, work): the work's exception is kept on the queue



def queue_name(queue: Any) -> str:
    """What messages call a backend's queue: its ``name`` attribute where it has one (``"mydev
    queue 3"``), else its repr."""
    name = getattr(queue, "name", None)
    return name if isinstance(name, str) and name else repr(queue)

class DeferredWork:
    """Runs jobs in order on a thread of its own (``name``), which exists only while there are jobs.

    Each job counts on its queue until it has run (``pending_for``: a queue with deferred work is
    busy), and its exception is kept on that queue (``keep``).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: collections.deque[Job] = collections.deque()
        self._counts: dict[Any, int] = {}
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._running: tuple[int, Any] | None = None  # (the runner's thread id, the queue of its job)

    def running_for(self) -> Any:
        """The queue whose job this thread is running (None elsewhere)."""
        running = self._running
        return running[1] if running is not None and running[0] == threading.get_ident() else None

    def pending_for(self, queue: Any) -> bool:
        """Whether a job of ``queue`` has not run yet."""
        return queue in self._counts

    def submit(self, jobs: list[Job]) -> None:
        """Run ``jobs`` after those already submitted."""
        with self._lock:
            for queue, _ in jobs:
                self._counts[queue] = self._counts.get(queue, 0) + 1
            self._jobs.extend(jobs)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()

    def wait(self, queue: Any) -> None:
        """Block until no job of ``queue`` is pending. On the runner's own thread, return at once
        (the jobs still pending come after the one running: waiting would never end)."""
        if queue not in self._counts:  # the common case, without the lock: a job is counted
            return  # before the host function that deferred it stops being pending
        with self._lock:
            if threading.current_thread() is self._thread:
                return
            self._lock.wait_for(lambda: queue not in self._counts)

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._thread = None
                    return
                queue, job = self._jobs.popleft()
            self._running = (threading.get_ident(), queue)
            try:
                job()
            except BaseException as exc:  # the queue's asynchronous error (its next synchronize)
                queue.keep(exc)
            finally:
                self._running = None
                with self._lock:
                    left = self._counts[queue] - 1
                    if left:
                        self._counts[queue] = left
                    else:
                        del self._counts[queue]
                    self._lock.notify_all()


def off_thread(call: Callable[[], T], name: str = "offload-off-thread") -> T:
    """``call()`` on a short-lived thread, waited for: for a driver call a host function needs
    answered (its own thread may not call the driver). Its exception is re-raised here."""
    result: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            result.append((True, call()))
        except BaseException as exc:
            result.append((False, exc))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


# --- host functions --------------------------------------------------------------------------

_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_TRAMPOLINES: list[Any] = []  # every trampoline made, alive for the life of the process


class HostFunctions:
    """Python host functions in stream order through one ``void (*)(void *)`` C trampoline.

    A backend subclasses it and implements ``launch_host_function(queue, address, key)``: the
    driver call enqueuing ``address`` (the trampoline) with ``key`` as its user data on the
    queue's stream (a driver without such a command arranges for ``run_host_function(key)`` to
    be called in queue order instead: the OpenCL backend's marker, gate and runner thread). While a function runs its thread is marked (``running_for``); the driver work
    asked from it is deferred (``deferring``) to ``deferred``, whose thread (``<name>-deferred``)
    runs it once the function has returned. Every exception is kept on its queue (``keep``).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._pending: dict[int, tuple[Any, Callable[[], None]]] = {}
        self._keys = itertools.count(1)
        self._lock = threading.Lock()
        #: thread id -> (the queue whose host function it runs, the work deferred from it); a dict
        #: rather than a threading.local: empty, as it mostly is, it answers without a lookup
        self._running: dict[int, tuple[Any, list[Job]]] = {}
        self.deferred = DeferredWork(f"{name}-deferred")
        self._trampoline = _HOST_FN(self._run)
        _TRAMPOLINES.append(self._trampoline)  # a dropped queue's functions may still call it
        self.address: int = ctypes.cast(self._trampoline, ctypes.c_void_p).value or 0

    def launch_host_function(self, queue: Any, address: int, key: int) -> None:
        """Enqueue the C function at ``address`` with user data ``key`` on ``queue`` (the driver's
        ``*LaunchHostFunc``); raise ``OffloadError`` if the driver refuses."""
        raise NotImplementedError(f"{type(self).__name__} must implement launch_host_function")

    def run_host_function(self, key: int) -> None:
        """Run the host function enqueued under ``key`` (what the trampoline does): for a driver
        with no C callback command (OpenCL), whose backend runs it from a thread of its own in
        queue order. Never raises: the function's exception is kept on its queue."""
        self._run(key)

    def _run(self, key: int | None) -> None:
        """The trampoline's body, on the driver's thread: the callable registered under ``key``."""
        with self._lock:
            queue, callback = self._pending[key or 0]
        ident = threading.get_ident()
        try:
            if queue.released:  # the final olShutDown released it from an earlier host function
                return
            later: list[Job] = []
            self._running[ident] = (queue, later)
            try:
                callback()
            except BaseException as exc:  # reported by the queue's next synchronize
                queue.keep(exc)
            finally:
                del self._running[ident]
                if later:  # counted on their queues before this function stops being pending
                    self.deferred.submit(later)
        finally:
            with self._lock:  # pending until it has returned
                del self._pending[key or 0]

    def running_for(self) -> Any:
        """The queue whose host function this thread is running, else None."""
        if not self._running:
            return None
        entry = self._running.get(threading.get_ident())
        return None if entry is None else entry[0]

    def deferring(self, queue: Any, work: Callable[[], None]) -> bool:
        """On a host function's thread: keep ``work`` to run once the function has returned and
        return True (its exception becomes an error of ``queue``, or of the function's own queue
        for None); elsewhere return False (the caller does the work itself)."""
        entry = self._running.get(threading.get_ident()) if self._running else None
        if entry is None:
            return False
        entry[1].append((queue or entry[0], work))
        return True

    def enqueue(self, queue: Any, callback: Callable[[], None]) -> None:
        """``callback`` in ``queue``'s order (``enqueue_host_call``). Asked from a host function of
        ``queue`` (on the driver's thread or the deferred one), it runs on the deferred thread
        after that function; asked from a host function of another queue, a short-lived thread
        makes the driver call (not allowed on the function's own thread) at once."""
        own = self.running_for()
        if own is not None:
            if queue is own:
                self.deferring(queue, callback)
            else:
                off_thread(lambda: self._launch(queue, callback), f"{self.name}-launch")
            return
        if self.deferred.running_for() is queue:
            self.deferred.submit([(queue, callback)])
            return
        self._launch(queue, callback)

    def _launch(self, queue: Any, callback: Callable[[], None]) -> None:
        key = next(self._keys)
        with self._lock:
            self._pending[key] = (queue, callback)
        try:
            self.launch_host_function(queue, self.address, key)
        except BaseException:
            with self._lock:
                self._pending.pop(key, None)
            raise

    def pending(self) -> int:
        """Host functions enqueued and not yet returned."""
        return len(self._pending)

    def has_pending_work(self, queue: Any, query: Callable[[Any], bool]) -> bool:
        """The ``has_pending_work`` hook: True while ``queue`` has deferred work, else the driver's
        answer ``query(queue)``; from a host function, True for its own queue and the query of
        another made on a short-lived thread (no driver call on the function's own)."""
        if queue in self.deferred._counts:
            return True
        if not self._running:  # no host function runs anywhere: ask here (the common case)
            return query(queue)
        own = self.running_for()
        if own is None:
            return query(queue)
        if own is queue:
            return True
        return off_thread(lambda: query(queue), f"{self.name}-query")

    def synchronize(
        self, queue: Any, release: bool, wait: Callable[[Any], None], recycle: Callable[[Any], None]
    ) -> None:
        """The ``synchronize`` hook: ``wait(queue)`` (the driver's wait for the stream), then the work
        its host functions deferred, then every kept error (``KeptErrors.raise_kept``); with
        ``release``, ``recycle(queue)`` gives its stream back whatever was raised.

        From a host function (no driver call there): its own queue cannot be waited for (the
        function holds it): without ``release`` that is ``INVALID_QUEUE``; released (the final
        ``olShutDown``), the host functions queued behind are dropped and ``recycle`` runs once the
        function has returned. Another queue released is synchronized after the function; one
        merely waited for is waited for by a short-lived thread. From a job of ``queue`` on the
        deferred thread, waiting for ``queue`` is ``INVALID_QUEUE`` too (it would wait for itself)."""
        own = self.running_for() if self._running else None
        if own is not None:
            self._synchronize_inside(own, queue, release, wait, recycle)
            return
        if self.deferred._running is not None and self.deferred.running_for() is queue:
            raise OffloadError(ErrorCode.INVALID_QUEUE, f"a host function on {queue_name(queue)} cannot wait for its own queue")
        try:
            try:
                wait(queue)
            finally:
                if queue in self.deferred._counts:  # work its host functions asked for, run after them
                    self.deferred.wait(queue)
            if queue._kept:
                queue.raise_kept()
        finally:
            if release:
                recycle(queue)

    def _synchronize_inside(
        self, own: Any, queue: Any, release: bool, wait: Callable[[Any], None], recycle: Callable[[Any], None]
    ) -> None:
        if queue is own:
            if not release:
                raise OffloadError(ErrorCode.INVALID_QUEUE, f"a host function on {queue_name(queue)} cannot wait for its own queue")
            queue.released = True
            self.deferring(queue, lambda: recycle(queue))
            queue.raise_kept()
            return
        if release:
            self.deferring(own, lambda: self.synchronize(queue, True, wait, recycle))
            return
        off_thread(lambda: self.synchronize(queue, False, wait, recycle), f"{self.name}-query")
