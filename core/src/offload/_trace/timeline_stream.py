"""The timeline as a Perfetto binary trace (``OFFLOAD_TRACE=perfetto[:PATH]``, PATH not ending in
``.json``), streamed: slices are fixed records in a ``Recorder`` (``_fastpath``'s, in C, or
``_perfetto.PyRecorder``) encoded only when a chunk is written; a chunk is appended to the file
every ``CHUNK`` slices, at ``flush_trace()``, at the final ``olShutDown`` and at exit, so memory
stays bounded on a long run and a crash loses at most the chunk being recorded.

The calls and the device work are the same as ``_timeline.Timeline``'s (its recording and timing
sources, ``_work_of`` / ``_enqueue`` / ``read_events``, are inherited), except that queued work on
a device whose entry points stamp (the host's, with the compiled path on) is stamped by its queue
(``Recorder.stamp``), as the compiled launch's is, not given an event and a host callback; and
what differs is the writing. An API slice is recorded when its call returns (name, thread, times, the flow to its
work; a failed call also carries its result and details as annotations, not its parameters,
which only the JSON form shows). A work item is drawn once it completed, queue by queue in
enqueue order (so a queue's spans never overlap), as in the JSON form; at the final write work
still unfinished is counted in an instant. The layout of the file is ``_perfetto``'s.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _version
from . import perfetto as _perfetto
from .perfetto import Encoder, annotation, vfield
from .timeline import Timeline
from .timeline_file import multiprocessing_exit
from .timeline_work import IN_CALL, STAMP, TIMING_SOURCE, TRACK_BASE, Work
from .._core.native import ENABLED, _fastpath
from .._core.session import LOCAL

if TYPE_CHECKING:
    from .._core.handles import Device, Queue

CHUNK = 16384  # slices per chunk written (about 2 MB of records; a write costs about as much as 2000 launches)
MAX_TRACKS = (1 << _perfetto.TRACK_BITS) - 1
CATEGORIES = ("api", "kernel", "memcpy", "fill", "host_function", "event_record", "event_wait", "offload", "build")


def recorder_class() -> Any:
    """``_fastpath.Recorder`` where the compiled path is on, ``PyRecorder`` otherwise."""
    return getattr(_fastpath, "Recorder", _perfetto.PyRecorder) if ENABLED else _perfetto.PyRecorder


class StreamTimeline(Timeline):
    """One session's timeline, streamed into a Perfetto binary file."""

    def __init__(self, path: str, owner_of: Callable[[int], Device | None]) -> None:
        super().__init__(path, owner_of)
        self.base = (self.rank + 1) if self.rank is not None else self.pid
        self.encoder = Encoder(self.base, self.origin_ns)
        self.recorder = recorder_class()(self.base, self.origin_ns)
        self.recorder.limit = CHUNK  # the compiled path's launches: a chunk when this many wait
        self.recorder.on_full = self._full
        self._names: dict[str, int] = {}
        self._new_names: list[tuple[int, str]] = []
        self._annotation_names: dict[str, int] = {}
        self._new_annotation_names: list[tuple[int, str]] = []
        self._tracks: dict[Any, int] = {}  # ("thread", tid) / ("device", pid) / ("queue", pid, tid) -> uuid
        self._new_tracks: list[bytes] = []
        self._side: list[bytes] = []  # packets made in Python (failures, instants), written with the chunk
        self._local = threading.local()  # this thread's native id
        self._fifos: dict[tuple[int, int], int] = {}  # (pid, tid) of a queue track -> its FIFO in the recorder
        self._open: dict[int, Work] = {}  # FIFO handle -> work whose completion is not known yet
        self._open_mark = CHUNK  # a write is due when this much work is open
        self._record_flows: dict[int, tuple[Work, int]] = {}  # id(event record work) -> (it, its flow)
        self._file: Any = None
        self._header_written = False
        self.api_track = self._uuid(("process",))
        self._cats = {cat: index + 1 for index, cat in enumerate(CATEGORIES)}

    # --- interning ------------------------------------------------------------------------------

    def _uuid(self, what: Any) -> int:
        uuid = self._tracks.get(what)
        if uuid is None:
            local = min(len(self._tracks), MAX_TRACKS)
            uuid = self._tracks[what] = self.base << _perfetto.TRACK_BITS | local
        return uuid

    def _name(self, name: str) -> int:
        return _intern(self._names, self._new_names, name)

    def _annotation_name(self, name: str) -> int:
        return _intern(self._annotation_names, self._new_annotation_names, name)

    def _who(self) -> str:
        return "" if self.rank is None else f"rank {self.rank}: "

    def _thread_track(self, tid: int, name: str) -> int:
        key = ("thread", tid)
        uuid = self._tracks.get(key)
        if uuid is None:
            uuid = self._uuid(key)
            self._new_tracks.append(self.encoder.track(uuid, name, parent=self.api_track, pid=self.pid, tid=tid))
            self.recorder.threads[tid] = uuid
        return uuid

    def _queue_track(self, item: Work) -> int:
        key = ("queue", item.pid, item.tid)
        uuid = self._tracks.get(key)
        if uuid is None:
            device = ("device", item.pid)
            if device not in self._tracks:
                label = next((lab for pid, lab in self._devices.values() if pid == item.pid), f"device {item.pid}")
                self._new_tracks.append(self.encoder.track(self._uuid(device), self._who() + label, rank=item.pid))
            uuid = self._uuid(key)
            label = self._queues.get((item.pid, item.tid), "queue")
            order = item.tid % TRACK_BASE
            self._new_tracks.append(self.encoder.track(uuid, label, parent=self._tracks[device], rank=order))
        return uuid

    # --- recording ------------------------------------------------------------------------------

    def record_call(self, api: str, args: tuple[Any, ...], result: Any, error: Any, start_ns: int, end_ns: int, final: bool) -> None:
        """Record one API call (and, when it enqueued work, that work)."""
        if final:
            self._closed = True
        elif self._pending:
            self.read_events()
        recorder = self.recorder
        work = self._work_of(api, args, result, start_ns, end_ns) if error is None else None
        local = self._local
        tid = getattr(local, "tid", None)
        if tid is None:  # (a system call: once per thread)
            tid = local.tid = threading.get_native_id()
        with self._lock:
            track = recorder.threads.get(tid) or self._thread_track(tid, threading.current_thread().name)
            name = self._names.get(api) or self._name(api)
            if work is not None:
                self._fifo(work)
                if api == "olLaunchKernel":  # what the compiled path needs to record the next ones itself
                    recorder.launch_iid = name
                    recorder.kernels[args[2]] = self._name(work.name)
                    if args[0] is not None:
                        recorder.queue_ix[args[0]] = self._queue_ix(work)
            if error is None:
                recorder.slice(track, name, 1, start_ns, end_ns, 0 if work is None else work.flow, 0)
            else:
                details = annotation(self._annotation_name("result"), f"OL_ERRC_{error.code.name}")
                if error.details:
                    details += annotation(self._annotation_name("details"), str(error.details))
                encoder = self.encoder
                self._side.append(encoder.event(_perfetto.SLICE_BEGIN, start_ns, track, name, details + vfield(3, self._cats["api"])))
                self._side.append(encoder.event(_perfetto.SLICE_END, end_ns, track))
            if not self._at_exit and not self.written:
                self._at_exit = True
                atexit.register(self._write_at_exit)
                self._child_exit = multiprocessing_exit(self._flush_at_child_exit)
            full = len(recorder) >= CHUNK or len(self._open) >= self._open_mark
        if full:
            self.flush(read_events=not final)
            # work that does not complete (a queue held up) must not make every call write: the
            # next write for it waits until as much again is outstanding
            self._open_mark = max(CHUNK, 2 * len(self._open))

    def span(self, name: str, cat: str, start_ns: int, end_ns: int, args: dict[str, Any]) -> None:
        """A span of the calling thread that is no API call (``offload.build``), with its ``args``
        as annotations (made in Python: such spans are rare)."""
        tid = getattr(self._local, "tid", None) or threading.get_native_id()
        with self._lock:
            track = self.recorder.threads.get(tid) or self._thread_track(tid, threading.current_thread().name)
            body = b"".join(annotation(self._annotation_name(key), value) for key, value in args.items())
            encoder = self.encoder
            self._side.append(encoder.event(_perfetto.SLICE_BEGIN, start_ns, track, self._name(name), body + vfield(3, self._cats[cat])))
            self._side.append(encoder.event(_perfetto.SLICE_END, end_ns, track))

    def _full(self) -> None:
        """The compiled path recorded a chunk's worth: write it (never from a host function's thread:
        events are not read there)."""
        self.flush(read_events=LOCAL.queue is None)

    def _time(self, work: Work, queue: Queue) -> None:
        """Queued work on a backend with a native stamp (offload_native.h, the compiled path on) is
        stamped by the queue when it reaches it, as the compiled launch's is: no event, and no host
        callback, which would give the queue a thread that needs the GIL. Elsewhere: Timeline's."""
        device = queue.device
        points = device.entry_points
        if points is not None and device.word is not None and queue.word is not None and self.recorder.stamps(points):
            work.stamp, work.timing = (device.entry_points, device.word, queue.word), STAMP
        else:
            super()._time(work, queue)

    def _queue_ix(self, item: Work) -> int:
        key = (item.pid, item.tid)
        ix = self._fifos.get(key)
        if ix is None:
            ix = self._fifos[key] = self.recorder.queue(self._queue_track(item))
        return ix

    def _fifo(self, item: Work) -> None:
        """Put ``item`` on its queue's FIFO in the recorder (which draws it once it completed)."""
        recorder = self.recorder
        self._work.clear()  # (Timeline's list: the FIFO holds the work here)
        item.flow = recorder.flow()
        flow_out = flow_event = 0
        if item.cat == "event_record":
            flow_out = recorder.flow()
            self._record_flows[id(item)] = (item, flow_out)
            if len(self._record_flows) > 4 * CHUNK:  # records waited on long ago: forget the oldest
                for old in list(self._record_flows)[:CHUNK]:
                    del self._record_flows[old]
        for source in item.sources:  # a wait: the flow from the record it waits on
            known = self._record_flows.get(id(source))
            if known is not None and known[0] is source:
                flow_event = known[1]
                break
        values: list[int] = []
        args = item.args
        if item.cat in ("memcpy", "fill"):
            values += [self._annotation_name("bytes"), args.get("bytes") or 0]
            if item.cat == "fill":
                values += [self._annotation_name("pattern_bytes"), args.get("pattern_bytes") or 0]
        elif item.cat == "kernel":
            values += [self._annotation_name("groups"), _product(args.get("num_groups") or [1])]
            values += [self._annotation_name("group_size"), _product(args.get("group_size") or [1])]
            values += [self._annotation_name("argument_bytes"), args.get("argument_bytes") or 0]
        handle = recorder.work(self._queue_ix(item), self._name(item.name), self._cats[item.cat], item.submit_ns, flow_out, item.flow, flow_event, *values)
        if item.stamp is not None:
            stamp, item.stamp = item.stamp, None
            if recorder.stamp(handle, *stamp):
                return
            item.end_ns, item.timing = time.perf_counter_ns(), IN_CALL  # the queue refused it: the work ends with its call
        self._open[handle] = item
        self._complete(handle, item)

    def _complete(self, handle: int, item: Work) -> bool:
        end = item.end_ns
        if item.event_end_ns is not None:
            end = item.event_end_ns if end is None else min(end, item.event_end_ns)
        if end is None:
            return False
        self.recorder.complete(handle, end)
        del self._open[handle]
        return True

    # --- writing --------------------------------------------------------------------------------

    def _place(self, final: bool) -> int:
        """Tell the recorder which work completed; the number left unfinished (when ``final``)."""
        for handle, item in list(self._open.items()):  # (self._lock is held)
            self._complete(handle, item)
        return int(self.recorder.unfinished()) if final else 0

    def _header(self) -> bytes:
        boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else self.origin_ns
        boot += self.origin_ns - time.perf_counter_ns()
        anchor = self.anchor
        wall = anchor["wall_ns"] + self.origin_ns - anchor["perf_ns"]
        encoder = self.encoder
        out = encoder.start(boot, self.origin_ns, wall)
        out += encoder.track(self.api_track, f"{self._who()}offload API (pid {self.pid})", pid=self.pid, process=True)
        values: list[tuple[str, Any]] = [("producer", f"offload {_version.__version__}"), ("device_timing", TIMING_SOURCE), ("format", "offload perfetto 1")]
        values += [(k, anchor[k]) for k in ("wall_ns", "perf_ns", "error_ns")] + [("origin_ns", self.origin_ns), ("sequence", self.base)]
        if self.rank is not None:
            values.append(("rank", self.rank))
        body = b"".join(annotation(self._annotation_name(name), value) for name, value in values)
        session = encoder.event(_perfetto.INSTANT, self.origin_ns, self.api_track, self._name("offload session"), body)
        categories = self.encoder.categories(list(self._cats.items()))
        return out + categories + self._interned() + session

    def _interned(self) -> bytes:
        if not self._new_names and not self._new_annotation_names:
            return b""
        names, self._new_names = self._new_names, []
        annotation_names, self._new_annotation_names = self._new_annotation_names, []
        return self.encoder.interned(names, annotation_names)

    def _chunk(self, final: bool) -> tuple[bytes, bytes]:
        """What to append around the slices (which the recorder writes itself, between them): new
        tracks and names first, the packets made in Python after. (self._lock is held.)"""
        head = b"" if self._header_written else self._header()
        self._header_written = True
        unfinished = self._place(final)
        if unfinished:
            label = f"{unfinished} work item(s) unfinished when the file was written"
            self._side.append(self.encoder.event(_perfetto.INSTANT, time.perf_counter_ns(), self.api_track, self._name(label)))
        side, self._side = self._side, []
        tracks, self._new_tracks = self._new_tracks, []
        return head + b"".join(tracks) + self._interned(), b"".join(side)

    def _replace_file(self) -> bool:
        """Append a chunk (the name is kept from the JSON form: this is what a write does)."""
        final = self.written
        try:
            if self._file is None:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                self._file = open(self.path, "wb", buffering=0)  # noqa: SIM115 - open for the session
            with self._lock:
                before, after = self._chunk(final)
                fd = self._file.fileno()
                _write(fd, before)
                self.recorder.write_to(fd)
                _write(fd, after)
            if final:
                self._file.close()
        except Exception as error:  # noqa: BLE001 - the timeline never fails the user's call
            self.warn("could not be written", error)
            return False
        self.announce("ui.perfetto.dev")
        return True

    def document(self) -> dict[str, Any]:
        raise TypeError("a streamed timeline has no JSON document (see _trace.perfetto_read.load)")


def _intern(table: dict[str, int], new: list[tuple[int, str]], name: str) -> int:
    """``name``'s interned id in ``table`` (1, 2, ...), a new one listed in ``new`` as (id, name)
    until the next packet carries it."""
    iid = table.get(name)
    if iid is None:
        iid = table[name] = len(table) + 1
        new.append((iid, name))
    return iid


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _product(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out
