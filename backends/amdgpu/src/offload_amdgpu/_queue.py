"""Queues are HIP streams (non-blocking, pooled per device); events are HIP timing events.

Host functions run through ``hipLaunchHostFunc`` with one C trampoline for the whole process:
the stream's worker calls it with a key, the key finds the callback. While it runs, the thread is
marked as running that queue's host function (``HostCalls.running_for``): HIP calls are not
allowed there, so the backend defers driver work asked from it (``_deferred``). Errors: every
exception a host function (or deferred work) raised is kept, in order, and raised by the queue's
next ``synchronize``: one ``OffloadError`` for one, an ``ExceptionGroup`` of them for several
(as the host backend does); an ``OffloadError`` stays itself, anything else becomes ``UNKNOWN``
(``OUT_OF_RESOURCES`` for ``MemoryError``) with the exception as its cause.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from offload import raise_kept_errors

from ._deferred import Deferred, Job, off_thread
from ._device import HipDevice
from ._errors import raise_hip_error

__all__ = ["HipEvent", "HipQueue", "HostCalls", "take_errors"]

log = logging.getLogger("offload_amdgpu")

HIP_STREAM_NON_BLOCKING = 1
HIP_ERROR_NOT_READY = 600


class HipQueue:
    """One stream of a device, plus the errors its host functions raised.

    ``released``: the final ``olShutDown`` released it from one of its own host functions; the
    host functions still queued behind are dropped. ``deferred``: jobs of it not yet run.
    """

    __slots__ = ("device", "stream", "errors", "released", "deferred", "lock")

    def __init__(self, device: HipDevice, stream: Any) -> None:
        self.device = device
        self.stream = stream
        self.errors: list[BaseException] = []
        self.released = False
        self.deferred = 0
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<HipQueue device={self.device.ordinal} stream={int(self.stream):#x}>"

    def keep(self, exc: BaseException) -> None:
        """Keep an asynchronous error for the next synchronize (logged if nothing will ask)."""
        if self.released:
            log.error("offload-amdgpu: after the final olShutDown, work on %r failed: %r", self, exc)
            return
        with self.lock:
            self.errors.append(exc)


class HipEvent:
    """A recorded HIP event and the queue it was recorded on (for that queue's host errors)."""

    __slots__ = ("handle", "queue")

    def __init__(self, handle: Any, queue: HipQueue) -> None:
        self.handle = handle
        self.queue = queue


def take_errors(queue: HipQueue) -> None:
    """Raise (and forget) every error kept since the last synchronize, in order."""
    with queue.lock:
        errors, queue.errors = queue.errors, []
    raise_kept_errors(errors, f"a host function on {queue!r}", f"host functions on {queue!r}")


class HostCalls:
    """Runs Python callbacks in stream order through one ``hipHostFn_t`` trampoline."""

    def __init__(self, hip: Any) -> None:
        self._hip = hip
        self._pending: dict[int, tuple[HipQueue, Callable[[], None]]] = {}
        self._keys = itertools.count(1)
        self._lock = threading.Lock()
        self._local = threading.local()
        self.deferred = Deferred(lambda queue, exc: queue.keep(exc))
        self._trampoline = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self._run)  # kept alive with self
        self._address = ctypes.cast(self._trampoline, ctypes.c_void_p).value

    def _run(self, key: int | None) -> None:
        with self._lock:
            queue, callback = self._pending[key or 0]
        local = self._local
        try:
            if queue.released:  # the final olShutDown released it from an earlier host function
                return
            local.queue, local.later = queue, []
            try:
                callback()
            except BaseException as exc:  # reported by the queue's next synchronize
                queue.keep(exc)
            finally:
                later: list[Job] = local.later
                local.queue = local.later = None
                if later:  # counted on their queues before this function stops being pending
                    self.deferred.submit(later)
        finally:
            with self._lock:  # pending until it has returned (see AMDGPUBackend._drain)
                del self._pending[key or 0]

    def running_for(self) -> HipQueue | None:
        """The queue whose host function this thread (a HIP stream's) is running, else None."""
        return getattr(self._local, "queue", None)

    def defer(self, queue: HipQueue, work: Callable[[], None]) -> None:
        """From a host function: run ``work`` on the deferred thread once the function has returned."""
        self._local.later.append((queue, work))

    def enqueue(self, queue: HipQueue, callback: Callable[[], None]) -> None:
        """``callback`` in ``queue``'s order. Asked from a host function of ``queue`` (on HIP's
        thread or the deferred one), it runs on the deferred thread after that function; asked
        from a host function of another queue, a short-lived thread makes the hipLaunchHostFunc
        call (not allowed on the function's own thread) at once."""
        own = self.running_for()
        if own is not None:
            if queue is own:
                self.defer(queue, callback)
            else:
                off_thread(lambda: self._launch(queue, callback))
            return
        if self.deferred.running_for() is queue:
            self.deferred.submit([(queue, callback)])
            return
        self._launch(queue, callback)

    def _launch(self, queue: HipQueue, callback: Callable[[], None]) -> None:
        key = next(self._keys)
        with self._lock:
            self._pending[key] = (queue, callback)
        status = self._hip.hipLaunchHostFunc(queue.stream, self._address, key)[0]
        if status:
            with self._lock:
                self._pending.pop(key, None)
            raise_hip_error(self._hip, "hipLaunchHostFunc", status)

    def pending(self) -> int:
        """Callbacks enqueued and not yet returned."""
        with self._lock:
            return len(self._pending)
