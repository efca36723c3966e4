"""The timeline: ``OFFLOAD_TRACE=perfetto`` (or ``perfetto:PATH``) as a Chrome trace-event file.

One file per ``olInit`` … final ``olShutDown`` session, written at that ``olShutDown`` (and at
interpreter exit if the session is still open), opened by ui.perfetto.dev and chrome://tracing.
``flush`` writes it before then (``offload.flush_trace()``, and the ``olShutDown`` that closes the
user's window while the library holds references of its own), and in a ``multiprocessing``
child when its target returns (``multiprocessing_exit``): each write replaces the file
atomically with everything recorded so far, so a process ended without exit handlers (Ray's
workers, ``os._exit``) leaves the file of its last write. The file holds:

- process ``offload API``: every ``ol*`` call as a complete span (``ph: "X"``, ``cat: "api"``) on
  the thread that made it, with the traced parameters and the result in ``args``;
- one process per device, with one track per queue (``tid`` = pid * 1000000 + the queue's number,
  never a real thread id; 0 for the synchronous track): the work each call enqueued, as a
  span (``cat``: ``kernel``, ``memcpy``, ``fill``, ``host_function``, ``event_record``,
  ``event_wait``) named after it (the kernel's name; ``memcpy HtoD`` …), with its sizes, grid and
  direction in ``args``; work done without a queue goes on the device's ``synchronous`` track
  (tid 0) and spans its call;
- a flow arrow (``ph: "s"`` / ``"f"``, ``bp: "e"``) from each enqueuing call to its work, and from
  an event's record to every wait on it in another queue.

Timing source, per work item (its ``args.timing`` says which, the file's ``otherData`` too):

- ``queue stamp``, where the device's entry points have ``stamp`` and the compiled path is on
  (the host backend): the queue stores the time it finished the work (``QueueStamps``), with no
  event and no callback;
- ``backend events``, where the backend implements ``create_event``, ``is_event_complete``,
  ``sync_event`` and ``event_elapsed_time`` (the host backend does; so do GPU backends): after each
  enqueuing call the tracer records an event of its own on the queue, and its completion time is
  the event's elapsed time from an anchor event of the device (recorded once on a private queue
  and synchronised, which ties the device's event clock to ``time.perf_counter_ns``). Events are
  read at later traced calls once complete (never inside a queue callback: a GPU driver forbids
  API calls there) and never after the final ``olShutDown`` has torn the backend down;
- ``completion callback``: a host call the tracer enqueues after the work (the backend's
  ``enqueue_host_call``) stamps the time the queue reached it. Every queued work item gets one; it
  also bounds an event time from above (an anchor read late cannot push work past it), and it
  times the work alone where events are missing or were still pending at the final ``olShutDown``;
- ``within its call``: work without a queue, or already finished when its call returned, ends
  at the call's end;
- ``unknown``: a backend with neither draws the work as zero-length at its enqueue.

A work span runs from when the queue could start it (its call began, and the queue's previous
work ended) to its completion. Work without a queue goes on the synchronous track. While the timeline is
on, each queue also runs the tracer's callbacks and events, so it reports pending work until the
last of them has run. Work that several threads enqueue on one queue at once is drawn in the order
their calls returned, which may differ from the order the queue ran it.

Under a launcher (``offload._core.ranks``) the process names start with ``rank N:``, and a ``{rank}``
in the path is the rank (``OFFLOAD_TRACE=perfetto:rank{rank}.json``); every file records its rank
and a wall-clock / monotonic anchor in ``otherData``, so that ``offload trace merge`` can put a
job's files on one clock (``_trace.job_timeline``).
The file's events, and the promises they keep, are ``timeline_file``'s.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import job_timeline as _job_timeline
from .._core import ranks as _ranks
from .._values.enums import DeviceInfo
from .timeline_file import multiprocessing_exit, trace_events
from .timeline_work import (  # fmt: skip
    DEVICE_PID_BASE, EVENT_HOOKS, EVENTS, IN_CALL, SYNCHRONOUS, TIMING_SOURCE,
    TRACK_BASE, UNKNOWN, DeviceClock, OffloadTraceWarning, QueueStamps, Work, anchor_clock,
    callable_name, direction, hex_of, json_default, number_of,
)
from .._version import __version__

if TYPE_CHECKING:
    from .._core.handles import Device, Event, Queue


class Timeline:
    """Collects one session's API spans and device work; ``write`` makes the trace-event file.

    ``owner_of(address)``: the device owning an allocation of the session (None if none does);
    the timeline is given it rather than reading the runtime's state."""

    def __init__(self, path: str, owner_of: Callable[[int], Device | None]) -> None:
        self.path = path
        self._owner_of = owner_of
        self.pid = os.getpid()  # a child forked inside the session writes nothing of the parent's
        self.origin_ns = time.perf_counter_ns()
        self.rank = _ranks.global_rank()  # named in the process names; None outside a launcher
        self.anchor = _job_timeline.clock_anchor()  # ties this file's clock to the wall clock, for merging
        self._written_origin = self.origin_ns
        self.written = False  # the final write is done: the session is over
        self._announced = False  # stderr said where the file is (once per session)
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one write at a time, the final one last
        self._calls: list[tuple[str, int, int, int, dict[str, Any], int, str]] = []  # name, tid, start, dur, args, flow, cat
        self._threads: dict[int, str] = {}
        self._work: list[Work] = []
        self._devices: dict[int, tuple[int, str]] = {}  # id(device) -> (pid, label)
        self._queues: dict[tuple[int, int], str] = {}
        self._events: dict[int, tuple[Event, Work]] = {}  # id(event handle) -> its record
        self._flows = itertools.count(1)
        self._clocks: dict[int, DeviceClock | None] = {}  # id(device) -> its clock (None: no event timing)
        self._pending: dict[tuple[int, int], collections.deque[Work]] = {}  # per queue, work whose event is unread
        self._reading = threading.Lock()  # one reader of events at a time
        self._closed = False  # the final olShutDown ran: no backend call any more
        self._at_exit = False  # registered at the first call: a failed olInit leaves no file
        self._child_exit: Any = None  # in a multiprocessing child: its finalizer (multiprocessing_exit)
        self._warned = False  # one OffloadTraceWarning per session
        self._stamps = QueueStamps()  # work its queue stamps (read at each write)

    # --- recording ------------------------------------------------------------------------------

    def call(
        self, api: str, args: tuple[Any, ...], result: Any, ok: bool, start_ns: int, end_ns: int, shown: dict[str, Any], final: bool = False
    ) -> None:
        """Record one API call (and, when it enqueued work, that work); ``final``: the last olShutDown."""
        if final:
            self._closed = True
        elif self._pending:
            self.read_events()
        thread = threading.current_thread()
        tid = threading.get_native_id()
        flow = 0
        if ok:
            work = self._work_of(api, args, result, start_ns, end_ns)
            if work is not None:
                flow = work.flow = next(self._flows)
        with self._lock:
            self._threads.setdefault(tid, thread.name)
            self._calls.append((api, tid, start_ns, end_ns - start_ns, shown, flow, "api"))
            if not self._at_exit and not self.written:
                self._at_exit = True
                atexit.register(self._write_at_exit)
                self._child_exit = multiprocessing_exit(self._flush_at_child_exit)

    def span(self, name: str, cat: str, start_ns: int, end_ns: int, args: dict[str, Any]) -> None:
        """Record a span of the calling thread that is no API call (``offload.build``: cat "build")."""
        tid = threading.get_native_id()
        with self._lock:
            self._threads.setdefault(tid, threading.current_thread().name)
            self._calls.append((name, tid, start_ns, end_ns - start_ns, dict(args), 0, cat))

    def read_events(self) -> None:
        """Read the completion time of the pending work whose event has completed, queue by queue
        in enqueue order (the first incomplete one ends a queue's turn: the rest come after it)."""
        if not self._reading.acquire(blocking=False):
            return  # another thread is reading them now
        try:
            with self._lock:
                queues = list(self._pending.items())
            for key, waiting in queues:
                while waiting and not self._closed:
                    if not self._read(waiting[0]):
                        break
                    waiting.popleft()
                if not waiting:
                    with self._lock:
                        if not waiting:
                            self._pending.pop(key, None)
        finally:
            self._reading.release()

    def _read(self, work: Work) -> bool:
        """Read one work item's event (False while it is incomplete); the event is then destroyed."""
        device = work.device
        if device is None or device._ctx is None:
            return True  # its session is over: the callback's stamp stands
        backend, native = device.backend, device.native
        clock = self._clocks.get(id(device))
        try:
            if not backend.is_event_complete(native, work.event):
                return False
            if clock is not None:
                elapsed_ms = backend.event_elapsed_time(native, clock.anchor, work.event)
                work.event_end_ns = clock.anchor_ns + round(float(elapsed_ms) * 1e6)
                work.timing = EVENTS
        except Exception:  # noqa: BLE001 - the callback still times it
            pass
        event, work.event = work.event, None
        if "destroy_event" in backend.implemented:
            try:
                backend.destroy_event(native, event)
            except Exception:  # noqa: BLE001
                pass
        return True

    def _clock(self, device: Device) -> DeviceClock | None:
        key = id(device)
        if key not in self._clocks:
            clock = anchor_clock(device) if EVENT_HOOKS <= device.backend.implemented else None
            with self._lock:
                self._clocks.setdefault(key, clock)
        return self._clocks[key]

    def _device_pid(self, device: Device) -> int:
        key = id(device)
        with self._lock:
            known = self._devices.get(key)
            if known is None:
                name = device.info.get(DeviceInfo.NAME, "")
                label = f"device {device.platform.name}:{device.index}" + (f" ({name})" if name else "")
                known = self._devices[key] = (DEVICE_PID_BASE + len(self._devices), label)
        return known[0]

    def _work_of(self, api: str, args: tuple[Any, ...], result: Any, start_ns: int, end_ns: int) -> Work | None:
        queue: Queue | None
        if api == "olLaunchKernel":
            queue, device, kernel, data, launch = args[:5]
            if isinstance(data, (list, tuple)):  # per-argument values (main's ArgPtrs)
                data = b"".join(bytes(memoryview(v).cast("B")) for v in data)
            grid = {
                "dimensions": launch.dimensions,
                "num_groups": list(launch.num_groups),
                "group_size": list(launch.group_size),
                "dyn_shared_memory": launch.dyn_shared_memory,
                "argument_bytes": 0 if data is None else memoryview(data).nbytes,
            }
            return self._enqueue(queue, device, kernel.name, "kernel", grid, start_ns, end_ns)
        if api == "olMemcpy":
            queue, dst, dst_device, src, src_device, size = args
            way = direction(src_device, dst_device)
            owner = dst_device if src_device.is_host else src_device
            info = {"bytes": number_of(size), "direction": way, "src": hex_of(src), "dst": hex_of(dst)}
            return self._enqueue(queue, owner, f"memcpy {way}", "memcpy", info, start_ns, end_ns)
        if api == "olMemFill":
            queue, ptr, pattern, size = args
            owner = queue.device if queue is not None else self._owner_of(ptr)  # (a synchronous fill names no queue)
            if owner is None:
                return None
            info = {"bytes": number_of(size), "pattern_bytes": memoryview(pattern).nbytes, "ptr": hex_of(ptr)}
            return self._enqueue(queue, owner, "fill", "fill", info, start_ns, end_ns)
        if api == "olLaunchHostFunction":
            queue, callback, _ = args
            name = callable_name(callback)
            return self._enqueue(queue, queue.device, f"host function {name}", "host_function", {"callback": name}, start_ns, end_ns)
        if api == "olCreateEvent":
            queue = args[0]  # (and main's flags)
            work = self._enqueue(queue, queue.device, "event record", "event_record", {"event": f"{id(result):#x}"}, start_ns, end_ns)
            with self._lock:
                self._events[id(result)] = (result, work)
            return work
        if api == "olWaitEvents":
            queue, events = args
            events = list(events)
            work = self._enqueue(queue, queue.device, "wait events", "event_wait", {"events": len(events)}, start_ns, end_ns)
            with self._lock:
                for event in events:
                    known = self._events.get(id(event))
                    if known is not None and known[0] is event and known[1].tid != work.tid:
                        work.sources.append(known[1])
            return work
        return None

    def _enqueue(
        self, queue: Queue | None, device: Device, name: str, cat: str, args: dict[str, Any], start_ns: int, end_ns: int
    ) -> Work:
        pid = self._device_pid(queue.device if queue is not None else device)
        tid = pid * TRACK_BASE + (0 if queue is None else queue.id)
        work = Work(name, cat, args, pid, tid, start_ns)
        with self._lock:
            self._queues.setdefault((pid, tid), SYNCHRONOUS if queue is None else f"queue #{queue.id}")
            self._work.append(work)
        if queue is None:
            work.end_ns, work.timing = end_ns, IN_CALL  # done within the call
            return work
        qdev = queue.device
        backend = qdev.backend
        if not backend.has_pending_work(qdev.native, queue.native):
            work.end_ns, work.timing = end_ns, IN_CALL  # finished before the call returned
            return work
        self._time(work, queue)
        return work

    def _time(self, work: Work, queue: Queue) -> None:
        """Arrange the timing of ``work`` queued on ``queue``: the queue's stamp, else its event
        and its completion callback."""
        if self._stamps.stamp(work, queue):
            return
        qdev = queue.device
        backend = qdev.backend
        if self._clock(qdev) is not None:
            try:
                work.event = backend.create_event(qdev.native, queue.native)
                work.device = qdev
                with self._lock:
                    self._pending.setdefault((work.pid, work.tid), collections.deque()).append(work)
            except Exception:  # noqa: BLE001 - the callback still times it
                work.event = None
        try:
            if "enqueue_host_call" not in backend.implemented:
                raise LookupError("no enqueue_host_call")
            backend.enqueue_host_call(qdev.native, queue.native, work.complete)
        except Exception:  # the queue refused more work: the user's call stands
            if work.event is None:
                work.timing = UNKNOWN
                work.end_ns = work.submit_ns

    # --- writing --------------------------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        """The trace events: metadata, API spans, work spans and flows, times in microseconds."""
        self._stamps.settle()
        with self._lock:
            calls = list(self._calls)
            threads = dict(self._threads)
            work = list(self._work)
            devices = list(self._devices.values())
            queues = dict(self._queues)
        origin = self._written_origin = min([self.origin_ns, *(c[2] for c in calls)])  # olInit is recorded after it started
        return trace_events(calls, threads, work, devices, queues, origin, self.rank, self._flows)

    def document(self) -> dict[str, Any]:
        events = self.events()
        other = {"producer": f"offload {__version__}", "device_timing": TIMING_SOURCE}
        other.update(_job_timeline.file_identity(self.rank, self.anchor, self._written_origin))
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}

    def announce(self, viewers: str) -> None:
        """Say on stderr, once per session, where the file is and what opens it (``viewers``)."""
        if not self._announced:
            self._announced = True
            print(f"offload: timeline written to {self.path} (open it in {viewers})", file=sys.stderr)

    def warn(self, what: str, error: BaseException) -> None:
        """Report a failure of the timeline itself, once per session, as an ``OffloadTraceWarning``."""
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            f"offload: the timeline {self.path} {what}: {type(error).__name__}: {error}"
            " (the API call was not affected; later timeline errors are not reported)",
            OffloadTraceWarning,
            stacklevel=4,
        )

    def write(self) -> None:
        """The final write (once per session: at the final olShutDown, or at exit)."""
        with self._writing:
            if self.written:
                return
            self.written = True
            if self._at_exit:
                atexit.unregister(self._write_at_exit)
            if self._child_exit is not None:
                self._child_exit.cancel()
            self._replace_file()

    def flush(self, read_events: bool = True) -> bool:
        """Write the file now with what is recorded so far, the session going on (later writes
        replace it with more); ``read_events``: first read the completed work's events (never
        from inside a queue callback). False once the final write is done or in a forked child."""
        if self.written or os.getpid() != self.pid:
            return False
        if read_events and not self._closed and self._pending:
            self.read_events()
        with self._writing:
            if self.written:
                return False
            return self._replace_file()

    def _replace_file(self) -> bool:
        """Replace the file atomically (a reader sees the old or the new whole file); say where on
        stderr the first time. A failure (an unwritable path, a directory) is one
        ``OffloadTraceWarning`` and leaves no temporary file behind."""
        tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            with open(tmp, "w") as f:
                json.dump(self.document(), f, separators=(",", ":"), default=json_default)
            os.replace(tmp, self.path)
        except Exception as error:  # noqa: BLE001 - the timeline never fails the user's call
            try:
                os.unlink(tmp)
            except OSError:
                pass
            self.warn("could not be written", error)
            return False
        self.announce("ui.perfetto.dev or chrome://tracing")
        return True

    def _write_at_exit(self) -> None:
        if os.getpid() == self.pid:
            self.write()

    def _flush_at_child_exit(self) -> None:
        self.flush()
