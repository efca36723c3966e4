"""Queues are HIP streams (non-blocking, pooled per device); events are HIP timing events.

Host functions run through ``hipLaunchHostFunc`` with one C trampoline for the whole process:
the stream's worker calls it with a key, the key finds the callback; an exception from a
callback is kept on its queue and raised by the queue's next ``synchronize``.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Callable
from typing import Any

from offload import ErrorCode, OffloadError

from ._device import HipDevice
from ._errors import raise_hip_error

__all__ = ["HipEvent", "HipQueue", "HostCalls"]

HIP_STREAM_NON_BLOCKING = 1
HIP_ERROR_NOT_READY = 600


class HipQueue:
    """One stream of a device, plus the errors its host functions raised."""

    __slots__ = ("device", "stream", "errors")

    def __init__(self, device: HipDevice, stream: Any) -> None:
        self.device = device
        self.stream = stream
        self.errors: list[BaseException] = []

    def __repr__(self) -> str:
        return f"<HipQueue device={self.device.ordinal} stream={int(self.stream):#x}>"


class HipEvent:
    """A recorded HIP event and the queue it was recorded on (for that queue's host errors)."""

    __slots__ = ("handle", "queue")

    def __init__(self, handle: Any, queue: HipQueue) -> None:
        self.handle = handle
        self.queue = queue


def take_errors(queue: HipQueue, call: str) -> None:
    """Raise (and forget) what the queue's host functions raised since the last synchronize."""
    if queue.errors:
        errors, queue.errors = queue.errors, []
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise OffloadError(
            ErrorCode.UNKNOWN, f"{call}: a host function on the queue raised {type(first).__name__}: {first}{more}"
        ) from first


class HostCalls:
    """Runs Python callbacks in stream order through one ``hipHostFn_t`` trampoline."""

    def __init__(self, hip: Any) -> None:
        self._hip = hip
        self._pending: dict[int, tuple[HipQueue, Callable[[], None]]] = {}
        self._keys = itertools.count(1)
        self._lock = threading.Lock()
        self._trampoline = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self._run)  # kept alive with self
        self._address = ctypes.cast(self._trampoline, ctypes.c_void_p).value

    def _run(self, key: int | None) -> None:
        with self._lock:
            queue, callback = self._pending[key or 0]
        try:
            callback()
        except BaseException as exc:  # reported by the queue's next synchronize
            queue.errors.append(exc)
        finally:
            with self._lock:  # pending until it has returned (see AMDGPUBackend._drain)
                del self._pending[key or 0]

    def enqueue(self, queue: HipQueue, callback: Callable[[], None]) -> None:
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
