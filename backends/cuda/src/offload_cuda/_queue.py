"""Queues are CUDA streams (non-blocking, from a per-device pool); events are CUDA events (from
a pool, with timing). Host functions run through ``cuLaunchHostFunc`` in stream order: the
Python callable is kept alive until it ran. Errors: every exception a host function raised is
kept, in order, and raised by the queue's next ``synchronize`` (or a ``sync_event`` of an event
recorded on it): one ``OffloadError`` for one, an ``ExceptionGroup`` of them for several, as the
host backend does; an ``OffloadError`` stays itself, anything else becomes ``UNKNOWN``
(``OUT_OF_RESOURCES`` for ``MemoryError``) with the exception as its cause."""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Callable
from typing import Any

from offload import raise_kept_errors

from ._device import CudaDevice
from ._driver import check

__all__ = ["CudaEvent", "CudaQueue", "StreamPool", "EventPool", "take_errors"]

_CU_STREAM_NON_BLOCKING = 1
_CUDA_ERROR_NOT_READY = 600


class CudaQueue:
    """One stream and the errors of its host functions (raised by the next ``synchronize``)."""

    __slots__ = ("stream", "errors", "lock", "__weakref__")

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()

    def keep(self, exc: BaseException) -> None:
        """Keep a host function's exception for the next synchronize."""
        with self.lock:
            self.errors.append(exc)


class CudaEvent:
    """A recorded CUDA event and the queue it was recorded on (for that queue's host errors)."""

    __slots__ = ("event", "queue")

    def __init__(self, event: Any, queue: CudaQueue) -> None:
        self.event = event
        self.queue = queue


def take_errors(queue: CudaQueue) -> None:
    """Raise (and forget) every host-function error kept since the last synchronize, in order."""
    if not queue.errors:
        return
    with queue.lock:
        errors, queue.errors = queue.errors, []
    raise_kept_errors(errors, "a host function", "host functions")


class StreamPool:
    """Non-blocking streams of one device, reused after ``release``."""

    def __init__(self, device: CudaDevice) -> None:
        self.device = device
        self.free: list[Any] = []
        self.lock = threading.Lock()

    def acquire(self) -> CudaQueue:
        with self.lock:
            stream = self.free.pop() if self.free else None
        if stream is None:
            d = self.device.driver
            self.device.activate()
            stream = check(d, d.cuStreamCreate(_CU_STREAM_NON_BLOCKING), "cuStreamCreate")
        return CudaQueue(stream)

    def release(self, queue: CudaQueue) -> None:
        with self.lock:
            self.free.append(queue.stream)

    def destroy(self) -> None:
        d = self.device.driver
        with self.lock:
            streams, self.free = self.free, []
        for stream in streams:
            check(d, d.cuStreamDestroy(stream), "cuStreamDestroy")


class EventPool:
    """Events of one device (timing enabled, for ``olGetEventElapsedTime``), reused. ``destroy``
    destroys every event the pool made, released or not (events may outlive ``olShutDown``)."""

    def __init__(self, device: CudaDevice) -> None:
        self.device = device
        self.free: list[Any] = []
        self.made: list[Any] = []
        self.lock = threading.Lock()

    def acquire(self) -> Any:
        with self.lock:
            if self.free:
                return self.free.pop()
        d = self.device.driver
        self.device.activate()
        event = check(d, d.cuEventCreate(0), "cuEventCreate")
        with self.lock:
            self.made.append(event)
        return event

    def release(self, event: Any) -> None:
        with self.lock:
            self.free.append(event)

    def destroy(self) -> None:
        d = self.device.driver
        with self.lock:
            events, self.made, self.free = self.made, [], []
        for event in events:
            check(d, d.cuEventDestroy(event), "cuEventDestroy")


# --- host functions ------------------------------------------------------------------------

_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_pending: dict[int, tuple[Callable[[], None], CudaQueue]] = {}
_keys = itertools.count(1)


def _trampoline(key: int | None) -> None:
    """Runs on the driver's thread: the callable registered under ``key`` (then forgets it)."""
    callback, queue = _pending.pop(key or 0)
    try:
        callback()
    except BaseException as exc:  # reported by the queue's next synchronize
        queue.keep(exc)


_TRAMPOLINE = _HOST_FN(_trampoline)  # alive for the life of the module
_TRAMPOLINE_ADDRESS = ctypes.cast(_TRAMPOLINE, ctypes.c_void_p).value


def enqueue_host_call(device: CudaDevice, queue: CudaQueue, callback: Callable[[], None]) -> None:
    d = device.driver
    key = next(_keys)
    _pending[key] = (callback, queue)
    device.activate()
    try:
        check(d, d.cuLaunchHostFunc(queue.stream, d.CUhostFn(_TRAMPOLINE_ADDRESS), key), "cuLaunchHostFunc")
    except BaseException:
        _pending.pop(key, None)
        raise


def synchronize(device: CudaDevice, queue: CudaQueue) -> None:
    """Wait for the stream; raise a driver error, else every host-function error (``take_errors``)."""
    d = device.driver
    device.activate()
    check(d, d.cuStreamSynchronize(queue.stream), "cuStreamSynchronize")
    take_errors(queue)


def has_pending_work(device: CudaDevice, queue: CudaQueue) -> bool:
    d = device.driver
    device.activate()
    (result,) = d.cuStreamQuery(queue.stream)
    if int(result) == _CUDA_ERROR_NOT_READY:
        return True
    check(d, (result,), "cuStreamQuery")
    return False
