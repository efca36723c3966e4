"""Driver work that a host function asked for, run on a thread of the backend once it has returned.

HIP's ``hipLaunchHostFunc``: "The host function must not make any HIP API calls", and the
releases the core may ask from inside one (``olMemFree``, ``olDestroyProgram``, the final
``olShutDown``) cannot run there anyway: ``hipFree`` and ``hipModuleUnload`` synchronise the
device, whose stream is held by that very function. So such work is kept while the function runs
and handed, when it returns, to one ``offload-amdgpu-deferred`` thread that runs it in order. The
thread starts on demand and ends when it has nothing left; each job counts on its queue
(``HipQueue.deferred``) until it has run, so the queue reads busy until then.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Deferred", "Job", "off_thread"]

Job = tuple[Any, Callable[[], None]]  # (HipQueue, work); the work's exception is the queue's error


class Deferred:
    """Runs jobs in order on a thread of its own, which exists only while there are jobs."""

    def __init__(self, report: Callable[[Any, BaseException], None]) -> None:
        self._report = report  # keeps a job's exception on its queue
        self._jobs: collections.deque[Job] = collections.deque()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._local = threading.local()

    def running_for(self) -> Any:
        """The queue whose job this thread is running (None elsewhere)."""
        return getattr(self._local, "queue", None)

    def submit(self, jobs: list[Job]) -> None:
        """Run ``jobs`` after those already submitted; each counts on its queue until it ran."""
        with self._lock:
            for queue, _ in jobs:
                queue.deferred += 1
            self._jobs.extend(jobs)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="offload-amdgpu-deferred", daemon=True)
                self._thread.start()

    def wait(self, queue: Any) -> None:
        """Block until no job of ``queue`` is pending. On the runner's own thread, return at once
        (the jobs still pending come after the one running: waiting would never end)."""
        with self._lock:
            if threading.current_thread() is self._thread:
                return
            self._lock.wait_for(lambda: not queue.deferred)

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._thread = None
                    return
                queue, job = self._jobs.popleft()
            self._local.queue = queue
            try:
                job()
            except BaseException as exc:  # the queue's asynchronous error (its next synchronize)
                self._report(queue, exc)
            finally:
                self._local.queue = None
                with self._lock:
                    queue.deferred -= 1
                    self._lock.notify_all()


def off_thread(call: Callable[[], Any]) -> Any:
    """``call()`` on a short-lived thread, waited for: for a HIP query a host function needs
    answered (the function's own thread may not call HIP). Its exception is re-raised here."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append((True, call()))
        except BaseException as exc:
            result.append((False, exc))

    thread = threading.Thread(target=run, name="offload-amdgpu-query", daemon=True)
    thread.start()
    thread.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value
