"""Perfetto's binary trace format, written by hand: the few ``TracePacket`` messages the timeline
needs, encoded against the published ``perfetto_trace.proto`` (protos/perfetto/trace/).

Why by hand: the file needs six message types (TracePacket, TrackEvent, TrackDescriptor with its
Process/ThreadDescriptor, InternedData, ClockSnapshot, DebugAnnotation) and only varint and
length-delimited fields; the ``protobuf`` package would add a dependency of several MB and a
generated module of the whole schema (the ``perfetto`` package's is 2 MB), and builds a message
object per packet (measured: about 3 us per slice against 0.6 us here in Python and 0.05 us in
C, ``_fastpath``'s ``Recorder``). Tests decode the files with the published schema.

The layout of a file (one trusted packet sequence, ``base``: the rank + 1 under a launcher, the
pid otherwise, so that the files of a job can be concatenated without a clash):

- a ``ClockSnapshot`` defining the sequence-scoped clock 64 (ns since the session's origin) with
  the BOOTTIME, MONOTONIC and REALTIME readings at that origin, and ``TracePacketDefaults`` that
  time every later packet on clock 64 (so timestamps are a few bytes);
- a ``TrackDescriptor`` per process (the API process and one per device) and per thread or
  queue track, emitted as they appear; track uuids are ``base << 10 | local`` (a uuid of another
  file never equals one of this file);
- ``InternedData`` naming each event name and annotation name once (``iid``);
- per slice a ``TYPE_SLICE_BEGIN`` (name, flows, annotations) and a ``TYPE_SLICE_END`` packet;
  flow ids are ``base << 20 | n`` (mod 2**20: a flow is over when its work is drawn);
- an ``offload session`` instant on the API process track whose debug annotations carry what
  ``offload trace merge`` needs: rank, clock anchor (wall_ns, perf_ns, error_ns), origin_ns.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from typing import Any

CLOCK = 64  # the sequence-scoped clock: ns since the session's origin
BOOTTIME, MONOTONIC, REALTIME = 6, 3, 1
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3
SEQ_CLEARED = 1
FLOW_BITS = 20
TRACK_BITS = 10


_SMALL = [bytes((n,)) for n in range(128)]


def varint(value: int) -> bytes:
    """``value`` (unsigned, below 2**64; a negative int64 as protobuf writes it) as a varint."""
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def vfield(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def lfield(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def sfield(field: int, text: str) -> bytes:
    return lfield(field, text.encode("utf-8", "replace"))


def packet(body: bytes) -> bytes:
    """A ``Trace.packet`` (field 1) holding ``body``."""
    return lfield(1, body)


def annotation(name_iid: int, value: Any) -> bytes:
    """A ``DebugAnnotation`` (field 4 of TrackEvent): uint, int, double or string value."""
    body = vfield(1, name_iid)
    if isinstance(value, bool):
        body += vfield(2, int(value))
    elif isinstance(value, int):
        body += vfield(3, value) if value >= 0 else vfield(4, value)
    elif isinstance(value, float):
        body += key(5, 1) + struct.pack("<d", value)
    else:
        body += sfield(6, str(value))
    return lfield(4, body)


class Encoder:
    """The packets of one sequence (``seq``: its trusted_packet_sequence_id), timestamps relative to
    ``origin_ns``. Everything but the slices is rare and written here in Python; the slices go
    through a ``Recorder`` (``_fastpath``'s in C, or ``PyRecorder``), which encodes the same bytes."""

    def __init__(self, seq: int, origin_ns: int) -> None:
        self.seq = seq
        self.origin_ns = origin_ns
        self._seq = vfield(10, seq)

    def start(self, boottime_ns: int, monotonic_ns: int, realtime_ns: int) -> bytes:
        """The sequence's first packet: clears its state, defines clock 64, sets the defaults."""
        clocks = b"".join(
            lfield(1, vfield(1, clock) + vfield(2, value))
            for clock, value in ((CLOCK, 0), (BOOTTIME, boottime_ns), (MONOTONIC, monotonic_ns), (REALTIME, realtime_ns))
        )
        defaults = lfield(59, vfield(58, CLOCK))
        return packet(lfield(6, clocks) + self._seq + vfield(13, SEQ_CLEARED) + defaults + vfield(87, 1))

    def track(self, uuid: int, name: str, *, parent: int = 0, pid: int = 0, tid: int = 0, process: bool = False, rank: int = 0) -> bytes:
        """A ``TrackDescriptor``: a process track (``process``), a thread track (``tid``) or a
        named child track of ``parent`` (a queue); ``rank``: its sibling order."""
        body = vfield(1, uuid)
        if parent:
            body += vfield(5, parent)
        if process:
            body += lfield(3, vfield(1, pid) + sfield(6, name))
        elif tid:
            body += lfield(4, vfield(1, pid) + vfield(2, tid) + sfield(5, name))
        else:
            body += sfield(2, name)
        if rank:
            body += vfield(12, rank)
        return packet(lfield(60, body) + self._seq)

    def interned(self, names: list[tuple[int, str]], annotation_names: list[tuple[int, str]]) -> bytes:
        """``InternedData`` naming event names and debug annotation names by iid."""
        body = b"".join(lfield(2, vfield(1, iid) + sfield(2, name)) for iid, name in names)
        body += b"".join(lfield(3, vfield(1, iid) + sfield(2, name)) for iid, name in annotation_names)
        return packet(self._seq + lfield(12, body))

    def categories(self, categories: list[tuple[str, int]]) -> bytes:
        """``InternedData`` naming the event categories by iid."""
        body = b"".join(lfield(1, vfield(1, iid) + sfield(2, name)) for name, iid in categories)
        return packet(self._seq + lfield(12, body))

    def event(self, kind: int, ts_ns: int, track: int, name_iid: int = 0, annotations: bytes = b"", flows: bytes = b"") -> bytes:
        """One ``TrackEvent`` packet (instants and slices made in Python; ``annotations``: encoded
        ``DebugAnnotation`` fields, ``flows``: encoded flow id fields)."""
        event = vfield(9, kind) + vfield(11, track)
        if name_iid:
            event += vfield(10, name_iid)
        return packet(vfield(8, max(0, ts_ns - self.origin_ns)) + self._seq + lfield(11, event + annotations + flows))


RECORD_SLOTS = 4096  # event records remembered by flow (the C recorder's RECORD_SLOTS)


class PyRecorder:
    """The slices of a timeline, recorded as fixed tuples and encoded only when taken (the pure
    Python twin of ``_fastpath.Recorder``: same methods, same bytes).

    Device work goes through a queue's FIFO (``queue``, ``work``, ``complete``): ``take`` draws
    each queue's completed prefix in enqueue order, a span starting when both its call began and
    the queue's previous span ended (so a queue's spans never overlap), as ``Timeline`` does.
    The compiled path records its launches into the same FIFOs (``_fastpath``), its work
    completed by the queue's own stamp."""

    __slots__ = ("_encoder", "_records", "_queues", "_handles", "_next", "_flows", "_record_flow", "_record_end", "base", "launch_iid", "kernels", "threads", "queue_ix", "limit", "on_full")

    def __init__(self, seq: int, origin_ns: int) -> None:
        self._encoder = Encoder(seq, origin_ns)
        self._records: list[tuple[int, int, int, int, int, int, int, int, tuple[int, ...]]] = []
        self._queues: list[list[Any]] = []  # [uuid, deque of work entries, last end]
        self._handles: dict[int, list[Any]] = {}
        self._next = 0
        self._flows = 0
        self._record_flow = [0] * RECORD_SLOTS  # an event record's flow (direct-mapped, as the C recorder)
        self._record_end = [0] * RECORD_SLOTS  # its drawn end (0: not yet): its waits end no earlier
        self.base = seq
        self.launch_iid = 0  # what the compiled path needs (unused here): olLaunchKernel's name iid,
        self.kernels: dict[Any, int] = {}  # kernel -> name iid,
        self.threads: dict[int, int] = {}  # native thread id -> track uuid,
        self.queue_ix: dict[Any, int] = {}  # queue handle -> FIFO index,
        self.limit = 0  # and when to call on_full (a chunk is due)
        self.on_full: Any = None

    def slice(self, track: int, name_iid: int, cat_iid: int, begin_ns: int, end_ns: int, flow_out: int = 0, flow_in: int = 0, *values: int) -> None:
        """A slice on ``track`` (named by iid, its category by iid) from ``begin_ns`` to ``end_ns`` (perf_counter_ns); ``flow_out``: a
        flow leaving it, ``flow_in``: a flow it terminates (0: none); ``values``: pairs of
        (annotation name iid, unsigned value)."""
        self._records.append((track, name_iid, cat_iid, begin_ns, end_ns, flow_out, flow_in, 0, values))

    def flow(self) -> int:
        """A new flow id: ``base << FLOW_BITS | n`` (n mod 2**FLOW_BITS)."""
        self._flows += 1
        return self.base << FLOW_BITS | (self._flows & ((1 << FLOW_BITS) - 1))

    def queue(self, track: int) -> int:
        """A new queue FIFO drawing on ``track``: its index."""
        self._queues.append([track, deque(), 0])
        return len(self._queues) - 1

    def work(self, queue: int, name_iid: int, cat_iid: int, submit_ns: int, flow_out: int = 0, flow_in: int = 0, flow_in2: int = 0, *values: int) -> int:
        """Work enqueued on FIFO ``queue`` by a call that began at ``submit_ns`` (``flow_in2``: a
        second flow it ends, a wait's from its event's record): its handle for ``complete``."""
        entry = [submit_ns, 0, name_iid, cat_iid, flow_out, flow_in, flow_in2, values, self._next + 1]
        self._queues[queue][1].append(entry)
        if flow_out:  # an event record
            self._record_flow[flow_out % RECORD_SLOTS], self._record_end[flow_out % RECORD_SLOTS] = flow_out, 0
        self._next += 1
        self._handles[self._next] = entry
        return self._next

    def complete(self, handle: int, end_ns: int) -> None:
        """The work of ``handle`` completed at ``end_ns`` (once; later calls are ignored)."""
        entry = self._handles.pop(handle, None)
        if entry is not None:
            entry[1] = max(1, end_ns)

    def stamps(self, entry_points: Any) -> bool:
        """False: a queue stamps work only through ``_fastpath.Recorder`` (a backend's C entry point)."""
        return False

    def stamp(self, handle: int, entry_points: Any, device_word: int, queue_word: int) -> bool:
        """False: a queue stamps work only through ``_fastpath.Recorder`` (a backend's C entry point)."""
        return False

    def settle(self) -> list[tuple[int, int]]:
        """Each queue's completed prefix taken off its FIFO without drawing it: (handle, end) pairs."""
        out = []
        for q in self._queues:
            waiting = q[1]
            while waiting and waiting[0][1]:
                entry = waiting.popleft()
                out.append((entry[8], entry[1]))
        return out

    def unfinished(self) -> int:
        """Work not completed yet (counted at the final write)."""
        return sum(len(q[1]) for q in self._queues)

    def __len__(self) -> int:
        return len(self._records)

    def write_to(self, fd: int) -> int:
        """``take()`` written to the file descriptor ``fd``: the bytes written."""
        data = memoryview(self.take())
        while data:
            data = data[os.write(fd, data) :]
        return len(data.obj)  # type: ignore[arg-type]

    def take(self) -> bytes:
        """The recorded slices and the completed work, encoded; those are then forgotten."""
        moved = True
        while moved:  # (a wait waits for its record, on another queue, to be drawn: as the C recorder)
            moved = False
            for q in self._queues:
                track, waiting = q[0], q[1]
                while waiting and waiting[0][1]:
                    submit, end, name_iid, cat_iid, flow_out, flow_in, flow_in2, values, _ = waiting[0]
                    if flow_in2 and self._record_flow[flow_in2 % RECORD_SLOTS] == flow_in2:
                        if not self._record_end[flow_in2 % RECORD_SLOTS]:
                            break
                        end = max(end, self._record_end[flow_in2 % RECORD_SLOTS])
                    waiting.popleft()
                    moved = True
                    begin = max(submit, q[2])
                    q[2] = end = max(end, begin)
                    if flow_out and self._record_flow[flow_out % RECORD_SLOTS] == flow_out:
                        self._record_end[flow_out % RECORD_SLOTS] = end
                    self._records.append((track, name_iid, cat_iid, begin, end, flow_out, flow_in, flow_in2, values))
        records, self._records = self._records, []
        encoder = self._encoder
        out = []
        for track, name_iid, cat_iid, begin, end, flow_out, flow_in, flow_in2, values in records:
            extra = vfield(3, cat_iid) + b"".join(lfield(4, vfield(1, values[i]) + vfield(3, values[i + 1])) for i in range(0, len(values) - 1, 2))
            if flow_out:
                extra += vfield(47, flow_out)
            if flow_in:
                extra += vfield(48, flow_in)
            if flow_in2:
                extra += vfield(48, flow_in2)
            out.append(encoder.event(SLICE_BEGIN, begin, track, name_iid, extra))
            out.append(encoder.event(SLICE_END, max(begin, end), track))
        return b"".join(out)
