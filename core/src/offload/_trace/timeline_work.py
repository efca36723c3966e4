"""The timeline's pieces of device work, its per-device clocks and the value formatting its file
uses (``_trace.timeline`` records and writes them; see its module doc for the timing sources)."""

from __future__ import annotations

import operator
import threading
import time
from typing import TYPE_CHECKING, Any

from .._core.native import _fastpath

if TYPE_CHECKING:
    from .._core.handles import Device, Queue

TIMING_SOURCE = (
    "the queue's stamp (offload_native.h) where the backend has one and the compiled path is on; else "
    "backend events (event_elapsed_time from a per-device anchor event) where the backend has them, "
    "bounded by host completion callbacks (enqueue_host_call); the callbacks alone otherwise"
)
EVENTS, CALLBACK, IN_CALL, UNKNOWN = "backend events", "completion callback", "within its call", "unknown"
STAMP = "queue stamp"  # the backend's native stamp (offload_native.h): QueueStamps, Recorder.stamp
EVENT_HOOKS = frozenset({"create_event", "is_event_complete", "sync_event", "event_elapsed_time"})
TRACK_BASE = 1_000_000  # a device's tracks are tid pid * TRACK_BASE + queue id (0: synchronous), apart from real tids
SYNCHRONOUS = "synchronous (no queue)"
API_PID = 1
DEVICE_PID_BASE = 100


class Work:
    """One piece of device work: a kernel, a copy, a fill, a host function, an event record or wait."""

    __slots__ = ("name", "cat", "args", "pid", "tid", "submit_ns", "end_ns", "flow", "sources", "timing", "event", "event_end_ns", "device", "stamp")

    def __init__(self, name: str, cat: str, args: dict[str, Any], pid: int, tid: int, submit_ns: int) -> None:
        self.name = name
        self.cat = cat
        self.args = args
        self.pid = pid
        self.tid = tid
        self.submit_ns = submit_ns  # the enqueuing call's start
        self.end_ns: int | None = None  # stamped by the completion callback
        self.flow = 0  # id of the flow from the enqueuing call
        self.sources: list[Work] = []  # event records this wait waits on
        self.timing = CALLBACK
        self.event: Any = None  # the tracer's own backend event after the work, until read
        self.event_end_ns: int | None = None  # that event's completion on the perf_counter clock
        self.device: Device | None = None
        self.stamp: Any = None  # the streamed timeline's: (entry points, device word, queue word) to stamp it

    def complete(self) -> None:
        """The completion callback: runs on the queue once everything before it is done."""
        self.end_ns = time.perf_counter_ns()


class DeviceClock:
    """A device's anchor event and the perf_counter time it completed: event times to host times."""

    __slots__ = ("anchor", "anchor_ns")

    def __init__(self, anchor: Any, anchor_ns: int) -> None:
        self.anchor = anchor
        self.anchor_ns = anchor_ns


def anchor_clock(device: Device) -> DeviceClock | None:
    """Record and synchronise an event on a private queue of ``device`` (released at once)."""
    backend, native = device.backend, device.native
    try:
        queue = backend.create_queue(native)
    except Exception:
        return None
    try:
        anchor = backend.create_event(native, queue)
        backend.sync_event(native, anchor, queue)
        return DeviceClock(anchor, time.perf_counter_ns())
    except Exception:
        return None
    finally:
        try:
            backend.synchronize(native, queue, True)
        except Exception:  # noqa: BLE001 - the timeline must never fail the user's call
            pass


class OffloadTraceWarning(UserWarning):
    """The timeline could not record a call or write its file; the API call itself is unaffected."""


def number_of(value: Any) -> int | None:
    """An address or size argument as the call saw it (an ``__offload_ptr__`` object, an
    ``__index__`` integer such as numpy's), None when it is neither."""
    try:
        candidate = getattr(value, "__offload_ptr__", value)
        return None if isinstance(candidate, bool) else operator.index(candidate)
    except Exception:  # noqa: BLE001 - the call itself validated it; the timeline shows what it can
        return None


def hex_of(value: Any) -> str:
    number = number_of(value)
    return f"{number:#x}" if number is not None else repr(value)


def json_default(value: Any) -> Any:
    """``json.dump``'s fallback: integers and floats of other types (numpy's) by value, else text."""
    number = number_of(value)
    if number is not None:
        return number
    try:
        return float(value)
    except Exception:  # noqa: BLE001
        return str(value)


def direction(src_device: Device, dst_device: Device) -> str:
    return ("H" if src_device.is_host else "D") + "to" + ("H" if dst_device.is_host else "D")


def callable_name(value: Any) -> str:
    func = getattr(value, "func", value)  # functools.partial
    return str(getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__)


class QueueStamps:
    """Queued work timed by its queue (a backend's ``stamp`` entry point, offload_native.h, the
    compiled path on) for the JSON timeline: no event and no host callback (which on the host
    device needs a queue thread holding the GIL). The ends land in a ``_fastpath.Recorder``'s
    FIFOs, read at each write (``settle``)."""

    def __init__(self) -> None:
        self._recorder: Any = None  # a _fastpath.Recorder; False: there is none (no compiled path)
        self._fifos: dict[tuple[int, int], int] = {}  # (pid, tid) of a queue track -> its FIFO
        self._open: dict[int, Work] = {}  # FIFO handle -> work not settled yet
        self._lock = threading.Lock()

    def stamp(self, work: Work, queue: Queue) -> bool:
        """Have ``queue`` stamp ``work`` when it reaches it: False where it cannot (nothing done)."""
        device = queue.device
        points = device.entry_points
        if points is None or device.word is None or queue.word is None:
            return False
        with self._lock:
            recorder = self._recorder
            if recorder is None:
                make = getattr(_fastpath, "Recorder", None)
                recorder = self._recorder = make(0, 0) if make is not None else False
            if recorder is False or not recorder.stamps(points):  # (a Recorder's truth is its length)
                return False
            ix = self._fifos.get((work.pid, work.tid))
            if ix is None:
                ix = self._fifos[(work.pid, work.tid)] = recorder.queue(0)
            handle = recorder.work(ix, 0, 0, work.submit_ns)
            if not recorder.stamp(handle, points, device.word, queue.word):
                recorder.complete(handle, 1)  # (settled, and ignored: the caller times it otherwise)
                return False
            work.timing = STAMP
            self._open[handle] = work
            return True

    def settle(self) -> None:
        """Give the work stamped since the last call its end."""
        with self._lock:
            if self._recorder is not None and self._recorder is not False:
                for handle, end in self._recorder.settle():
                    work = self._open.pop(handle, None)
                    if work is not None:
                        work.end_ns = end
