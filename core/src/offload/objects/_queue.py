"""Queues and events as objects: a queue synchronises on leaving its ``with`` block."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._api.flat import QueueHandle
from .._api.flat import EventHandle
from .._api.flat import (
    olCreateEvent,
    olCreateQueue,
    olDestroyEvent,
    olDestroyQueue,
    olGetEventElapsedTime,
    olGetEventInfo,
    olLaunchHostFunction,
    olQueryQueue,
    olSyncEvent,
    olSyncQueue,
    olWaitEvents,
)
from .._values.enums import ErrorCode, EventInfo
from .._values.errors import OffloadError
from .._api.sessions import adopt_stream, backend_name, queue_stream, session_of
from . import _session
from ._context import Context, context_handle
from ._discovery import Device, as_device
from ._array import Array
from ._arrayexport import register_queue
from ._buffer import Buffer
from ._copies import endpoint, fast_copy
from ._memory import memcpy, wrong_type
from ._program import Kernel, same_call
from ._records import QUEUE_COPY, QueueRecord, copying, relaunching
from ._makers import MAKERS

if TYPE_CHECKING:
    from .._api.sessions import Session
    from ._program import Extent


def _destroy_queue(ctx: Session, handle: QueueHandle, inflight: list[Any]) -> None:
    """Finalizer: wait for work that holds objects alive, then destroy (nothing after shutdown)."""
    if _session.is_current(ctx) and session_of(handle) is ctx:
        try:
            if inflight:
                olSyncQueue(handle)
        except OffloadError:
            pass  # an asynchronous error nobody asked for any more
        try:
            olDestroyQueue(handle)
        except OffloadError:
            pass
    inflight.clear()


def _destroy_adopted(ctx: Session, handle: QueueHandle, inflight: list[Any], stream: Any) -> None:
    """Finalizer of a queue over another library's stream: synchronise always, so the flat queue
    is released at once (never parked on a stream whose owner may destroy it once let go)."""
    inflight.append(stream)  # any non-empty list: _destroy_queue synchronises
    _destroy_queue(ctx, handle, inflight)


def _destroy_event(ctx: Session, handle: EventHandle) -> None:
    if _session.is_current(ctx) and session_of(handle) is ctx:
        try:
            olDestroyEvent(handle)
        except OffloadError:
            pass


class Queue(QueueRecord, _session.ClosedOnExit, _session.HandleOwner[QueueHandle]):
    """An in-order queue of one device, owned by ``context`` (default: the platform's default context).

    Objects used by enqueued work (buffers, arrays, host memory, kernels) are kept alive until the
    queue is synchronised. ``close()`` and the end of a ``with`` block synchronise, then destroy;
    so does the garbage collector when it finds a queue whose work still holds objects.
    """

    __slots__ = ("_device", "_context", "_finalizer", "__weakref__")  # (_handle, _inflight: the record's)

    def __init__(self, device: Device | str | None = None, *, context: Context | None = None) -> None:
        owner = context_handle(context)  # (a Context, or INVALID_CONTEXT)
        dev = as_device(device) if context is None else context.device(device)
        ctx = _session.acquire()
        handle = olCreateQueue(dev.handle) if owner is None else olCreateQueue(dev.handle, context=owner)
        self._device = dev
        self._context = context
        self._inflight = []
        self._own(handle, _destroy_queue, ctx, handle, self._inflight)
        register_queue(self)

    @classmethod
    def from_stream(cls, stream: Any, device: Device | str | None = None, *, context: Context | None = None) -> Queue:
        """A Queue over another library's driver stream of ``device`` (a CUDA or HIP device): an int
        handle or an object with ``__cuda_stream__`` (a cuda.core ``Stream``, a CuPy stream, ...),
        as CuPy's ``ExternalStream`` or cuda.core's ``Stream.from_handle`` take one.

        The stream stays its owner's: offload's work goes on it in order with the owner's,
        ``sync()`` / ``is_idle`` cover the owner's work too, and ``close()`` (or collection)
        synchronises, then lets go without destroying the stream. An object given is held until
        then; an int handle must be kept alive by its owner until the Queue is closed."""
        owner = context_handle(context)
        dev = as_device(device) if context is None else context.device(device)
        ctx = _session.acquire()
        handle = adopt_stream(dev.handle, stream, owner)
        queue = cls.__new__(cls)
        queue._device = dev
        queue._context = context
        queue._inflight = []
        queue._own(handle, _destroy_adopted, ctx, handle, queue._inflight, stream)
        register_queue(queue)
        return queue

    @property
    def device(self) -> Device:
        return self._device

    @property
    def raw_stream(self) -> int:
        """The driver stream under this queue (a ``CUstream`` / ``hipStream_t`` address), for
        another library to enqueue work on in this queue's order; valid until ``close()``.
        UNSUPPORTED on devices without streams (the host, OpenCL)."""
        return queue_stream(self._handle)

    def __cuda_stream__(self) -> tuple[int, int]:
        """cuda.core's stream protocol, version 0: ``(0, CUstream)`` of a CUDA queue, so that
        cuda.core (``launch(queue, ...)``, ``Device.create_stream(queue)``), CuPy and others
        enqueue on it in its order. UNSUPPORTED for a queue of another platform (``raw_stream``
        gives a HIP queue's stream)."""
        if backend_name(self._device.handle) != "cuda":
            raise OffloadError(ErrorCode.UNSUPPORTED, f"__cuda_stream__: {self!r} is not a CUDA queue (see raw_stream)")
        return (0, queue_stream(self._handle))

    @property
    def context(self) -> Context:
        """The context owning the queue (the platform's default one for a queue made without one)."""
        return self._device.platform.default_context if self._context is None else self._context

    def _hold(self, obj: Any) -> None:
        self._inflight.append(obj)

    # --- work ------------------------------------------------------------------------------

    @relaunching(queued=True, miss=Kernel._run)  # (its verdicts, the kernel's remembered launches, replayed in C: _records)
    def launch(self, kernel: Kernel, grid: Extent, block: Extent, *args: Any, shared_memory: int = 0) -> None:
        """Enqueue ``kernel`` over ``grid`` groups of ``block`` items with ``args`` packed by its layout."""
        try:
            m = kernel._memo  # the kernel's last launch (Kernel._memo): reused for the same objects
        except AttributeError:
            raise wrong_type("kernel", "an offload.Kernel (program.kernel(name))", kernel) from None
        if same_call(m, args, grid, block, shared_memory):
            m.launch(self._handle, m.device, m.kernel, m.data, m.sizes)
            self._inflight.append(m)  # holds the arguments and the kernel (its program) until a sync
            return
        self._inflight.append(kernel._run(self._handle, grid, block, shared_memory, args))

    @copying(QUEUE_COPY, 3, destination=1, source=2, queue=0)  # (its verdicts replayed in C: _records)
    def copy(self, dst: Any, src: Any) -> None:
        """Enqueue a copy of all of ``src`` into ``dst`` (Buffers, contiguous Arrays, host buffers)."""
        dst_class, src_class = dst.__class__, src.__class__
        if dst_class is Buffer and src_class is Buffer:
            if src._size <= dst._size and fast_copy(dst, 0, src, 0, src._size, self, (src, dst), (dst, QUEUE_COPY, (self, dst, src))):
                return  # the common cases in one frame (see fast_copy); every other one is checked below
        elif dst_class is Array and src_class is Array and dst._contiguous and src._contiguous:
            if src._nbytes <= dst._nbytes and fast_copy(
                dst._buffer, dst._offset, src._buffer, src._offset, src._nbytes, self, (src, dst), (dst, QUEUE_COPY, (self, dst, src))
            ):
                return
        dst_address, dst_size, dst_device, keep_dst = endpoint(dst, True, "dst")
        src_address, nbytes, src_device, keep_src = endpoint(src, False, "src")
        if nbytes > dst_size:
            raise OffloadError(ErrorCode.INVALID_SIZE, f"src has {nbytes} bytes, dst only {dst_size}")
        memcpy(self, dst_address, dst_device, src_address, src_device, nbytes, (keep_dst, keep_src))

    def fill(self, buffer: Any, pattern: Any) -> None:
        """Enqueue a fill of a Buffer with the repeated bytes of ``pattern``."""
        if not isinstance(buffer, Buffer):
            raise wrong_type("buffer", "an offload.Buffer", buffer)
        buffer.fill(pattern, queue=self)

    def host_function(self, function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` on the host in queue order (an exception fails the next sync)."""
        olLaunchHostFunction(self._handle, _call, (function, args))

    def record(self) -> Event:
        """An event that completes once every earlier piece of work on this queue has."""
        return Event(self)

    def wait(self, *events: Event) -> None:
        """Make later work on this queue wait for ``events`` (of any queue, any device)."""
        for event in events:
            if not isinstance(event, Event):
                raise wrong_type("each event", "an offload.objects.Event (queue.record())", event, ErrorCode.INVALID_EVENT)
        olWaitEvents(self._handle, [e.handle for e in events])
        self._inflight.append(events)

    def sync(self) -> None:
        """Block until every piece of work is done; raise the first asynchronous error."""
        inflight = self._inflight
        done = len(inflight)  # work enqueued by other threads meanwhile keeps its objects
        try:
            olSyncQueue(self._handle)
        finally:
            del inflight[:done]

    @property
    def is_idle(self) -> bool:
        """Whether all enqueued work is complete (does not block)."""
        done = olQueryQueue(self._handle)
        return bool(done)

    # --- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Synchronise, then destroy the queue (idempotent; a queue of an ended session just lets go)."""
        if not self._finalizer.alive:
            return
        if (owner := session_of(self._handle)) is None or not _session.is_current(owner):
            self._finalizer()
            return
        try:
            self.sync()
        finally:
            self._finalizer()

    def __repr__(self) -> str:
        state = " (closed)" if self.closed else ""
        return f"<offload.objects.Queue #{self._handle.id} on {self._device.id}{state}>"


def _call(packed: tuple[Callable[..., object], tuple[Any, ...]]) -> None:
    function, args = packed
    function(*args)


class Event(_session.Closing, _session.HandleOwner[EventHandle]):
    """A point in a queue's work: complete once everything enqueued before it is."""

    __slots__ = ("_handle", "_finalizer", "_queue", "__weakref__")

    def __init__(self, queue: Queue) -> None:
        ctx = _session.acquire()
        handle = olCreateEvent(queue.handle)
        self._queue = queue
        self._own(handle, _destroy_event, ctx, handle)

    @property
    def queue(self) -> Queue:
        return self._queue

    @property
    def is_complete(self) -> bool:
        return bool(olGetEventInfo(self._handle, EventInfo.IS_COMPLETE))

    def sync(self) -> None:
        """Block until the event is complete."""
        olSyncEvent(self._handle)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to ``end`` (both complete, same device)."""
        if not isinstance(end, Event):
            raise wrong_type("end", "an offload.objects.Event (queue.record())", end, ErrorCode.INVALID_EVENT)
        return olGetEventElapsedTime(self._handle, end.handle)

    def __sub__(self, start: Event) -> float:
        """``end - start``: the milliseconds from ``start`` to this event (``start.elapsed_time(end)``)."""
        if not isinstance(start, Event):
            return NotImplemented
        return start.elapsed_time(self)

    def close(self) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"<offload.objects.Event of queue #{self._queue.handle.id}>"


MAKERS.queue = Queue  # (for Device.queue and Context.queue: see _makers)
