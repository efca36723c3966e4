"""Reading the timeline's Perfetto binary files (``_perfetto``'s layout) back as trace events, for
``offload trace``, ``trace plot`` and ``trace merge`` (which read the JSON form too), and merging
them: the files of a job are concatenated (Perfetto traces concatenate; each file's sequence,
track uuids and flow ids carry its ``base``, so they never clash), after checking that each one
is such a file and that no two share a base (one rank twice).

The events are the JSON form's (``ph`` X / M / s / f / i; ``ts`` and ``dur`` in microseconds),
with the API process as pid 1 and devices from 100, queue tracks as tid ``pid * 10**6 + n``; in a
file holding several sessions (a merged job) each session is a group of ``PID_STRIDE`` pids and
its times are moved onto the wall clock by its clock anchor, as ``_job_timeline.merge`` does.
"""

from __future__ import annotations

import struct
from typing import IO, Any

from .job_timeline import ALIGNMENT, ANCHOR_KEY, PID_STRIDE, MergeError, write_atomically
from .timeline_work import API_PID, DEVICE_PID_BASE, TRACK_BASE

SESSION = "offload session"
HEAD_BYTES = 1 << 16  # the session instant is within a file's first packets


class PerfettoFormatError(ValueError):
    """Bytes that are not a well-formed Perfetto trace (the message says where)."""


def is_perfetto(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a Perfetto protobuf trace (its first byte is the
    key of ``Trace.packet``), not JSON."""
    return head[:1] == b"\x0a"


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise PerfettoFormatError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise PerfettoFormatError("varint longer than 10 bytes")


def fields(data: bytes | memoryview) -> list[tuple[int, Any]]:
    """The (field number, value) pairs of a message: an int, or bytes for a length-delimited field."""
    out: list[tuple[int, Any]] = []
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        field, wire = tag >> 3, tag & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise PerfettoFormatError(f"field {field}: {size} bytes past the end of its message")
            value, pos = bytes(data[pos : pos + size]), pos + size
        elif wire == 1:
            if pos + 8 > end:
                raise PerfettoFormatError("truncated fixed64")
            value, pos = struct.unpack_from("<d", data, pos)[0], pos + 8
        elif wire == 5:
            if pos + 4 > end:
                raise PerfettoFormatError("truncated fixed32")
            value, pos = struct.unpack_from("<I", data, pos)[0], pos + 4
        else:
            raise PerfettoFormatError(f"field {field}: unsupported wire type {wire}")
        out.append((field, value))
    return out


def packets(data: bytes | memoryview) -> list[bytes]:
    """The ``TracePacket`` bodies of a trace (``PerfettoFormatError`` for anything else)."""
    out = []
    for field, value in fields(data):
        if field != 1 or not isinstance(value, bytes):
            raise PerfettoFormatError(f"not a Perfetto trace: top-level field {field}")
        out.append(value)
    return out


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _annotations(raw: list[bytes], names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in raw:
        name, value = "", None
        for field, v in fields(item):
            if field == 1:
                name = names.get(v, f"#{v}")
            elif field == 10:
                name = _text(v)
            elif field in (2, 3, 5):
                value = bool(v) if field == 2 else v
            elif field == 4:
                value = v - (1 << 64) if v >= 1 << 63 else v
            elif field == 6:
                value = _text(v)
        out[name] = value
    return out


class _Sequence:
    __slots__ = ("names", "cats", "annotation_names", "session", "stack")

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.cats: dict[int, str] = {}
        self.annotation_names: dict[int, str] = {}
        self.session: dict[str, Any] | None = None
        self.stack: dict[int, list[tuple[int, str, str, dict[str, Any], list[int], list[int]]]] = {}


def decode(data: bytes | memoryview) -> dict[str, Any]:
    """A trace-event document (``traceEvents``, ``otherData``) of a timeline's binary file."""
    sequences: dict[int, _Sequence] = {}
    tracks: dict[int, dict[str, Any]] = {}
    timed: list[tuple[int, dict[str, Any]]] = []  # (sequence, event with ts in ns from its origin)
    for body in packets(data):
        packet = dict(fields(body))  # the fields read here are singular: the last stands, as in protobuf
        seq, interned, descriptor, event = packet.get(10, 0), packet.get(12), packet.get(60), packet.get(11)
        state = sequences.get(seq)
        if state is None:
            state = sequences[seq] = _Sequence()
        if interned is not None:
            for field, value in fields(interned):
                table = {1: state.cats, 2: state.names, 3: state.annotation_names}.get(field)
                if table is not None:
                    entry = dict(fields(value))
                    table[entry.get(1, 0)] = _text(entry.get(2, b""))
        if descriptor is not None:
            _track(descriptor, tracks, seq)
        if event is not None:
            _event(event, packet.get(8, 0), seq, state, timed)
    return _document(sequences, tracks, timed)


def _track(body: bytes, tracks: dict[int, dict[str, Any]], seq: int) -> None:
    info: dict[str, Any] = {"seq": seq, "parent": 0, "order": 0}
    for field, value in fields(body):
        if field == 1:
            info["uuid"] = value
        elif field == 5:
            info["parent"] = value
        elif field == 2:
            info["name"] = _text(value)
        elif field == 12:
            info["order"] = value
        elif field in (3, 4):
            sub = dict(fields(value))
            info["kind"] = "process" if field == 3 else "thread"
            info["pid"] = sub.get(1, 0)
            info["tid"] = sub.get(2, 0)
            info["name"] = _text(sub.get(6 if field == 3 else 5, b""))
    if "uuid" in info:
        tracks[info["uuid"]] = info


def _event(body: bytes, ts: int, seq: int, state: _Sequence, timed: list[tuple[int, dict[str, Any]]]) -> None:
    kind, track, name, cat = 0, 0, "", ""
    raw: list[bytes] = []
    flows_out: list[int] = []
    flows_in: list[int] = []
    for field, value in fields(body):
        if field == 9:
            kind = value
        elif field == 11:
            track = value
        elif field == 10:
            name = state.names.get(value, f"#{value}")
        elif field == 23:
            name = _text(value)
        elif field == 3:
            cat = state.cats.get(value, "")
        elif field == 22:
            cat = _text(value)
        elif field == 4:
            raw.append(value)
        elif field == 47:
            flows_out.append(value)
        elif field == 48:
            flows_in.append(value)
    args = _annotations(raw, state.annotation_names) if raw else {}
    if kind == 1:
        state.stack.setdefault(track, []).append((ts, name, cat, args, flows_out, flows_in))
    elif kind == 2:
        opened = state.stack.get(track)
        if opened:
            begin, name, cat, args, flows_out, flows_in = opened.pop()
            timed.append((seq, {"name": name, "cat": cat, "ph": "X", "track": track, "ts": begin, "dur": max(0, ts - begin), "args": args}))
            if cat == "memcpy" and name.startswith("memcpy "):
                args.setdefault("direction", name[7:])
            for flow in flows_out:  # an API call's flow goes to the work it enqueued; a record's to its waits
                timed.append((seq, {"name": "enqueue" if cat == "api" else "event", "cat": "flow", "ph": "s", "id": flow, "track": track, "ts": begin, "span": (begin, ts)}))
            for flow in flows_in:
                timed.append((seq, {"name": "flow", "cat": "flow", "ph": "f", "bp": "e", "id": flow, "track": track, "ts": begin, "span": (begin, ts)}))
    elif kind == 3:
        if name == SESSION and state.session is None:
            state.session = args
        else:
            timed.append((seq, {"name": name, "ph": "i", "s": "g", "track": track, "ts": ts, "args": args}))
            for flow in flows_in:
                timed.append((seq, {"name": "flow", "cat": "flow", "ph": "f", "bp": "e", "id": flow, "track": track, "ts": ts}))


def _document(sequences: dict[int, _Sequence], tracks: dict[int, dict[str, Any]], timed: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    sessions = [seq for seq, state in sequences.items() if state.session is not None]
    if not sessions:
        raise PerfettoFormatError("no 'offload session' packet: not a timeline written by offload")
    wall = {seq: _zero_wall(sequences[seq].session or {}) for seq in sessions}
    base = min(wall.values())
    group = {seq: index for index, seq in enumerate(sessions)}
    pid_of: dict[int, int] = {}  # top-level track uuid -> pid
    devices: dict[int, int] = {}
    metadata: list[dict[str, Any]] = []
    place: dict[int, tuple[int, int]] = {}  # track uuid -> (pid, tid)
    for uuid, info in sorted(tracks.items(), key=lambda kv: (kv[1]["parent"] != 0, kv[0])):
        offset = group.get(info["seq"], 0) * PID_STRIDE if len(sessions) > 1 else 0
        if info["parent"] == 0:
            if info.get("kind") == "process":
                pid = offset + API_PID
            else:
                devices[info["seq"]] = devices.get(info["seq"], 0) + 1
                pid = offset + DEVICE_PID_BASE + devices[info["seq"]] - 1
            pid_of[uuid] = pid
            place[uuid] = (pid, 0)
            metadata.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": info.get("name", "")}})
            metadata.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
            continue
        pid = pid_of.get(info["parent"], offset + API_PID)
        tid = info["tid"] if info.get("kind") == "thread" else pid * TRACK_BASE + info["order"]
        place[uuid] = (pid, tid)
        metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": info.get("name", "")}})
    seen_finish: set[int] = set()
    starts = {e["id"]: e["name"] for _, e in timed if e["ph"] == "s"}
    start_ns: dict[int, int] = {}
    for _, e in timed:  # flows strictly inside their slices (1 ns in), as the JSON form draws them
        if "span" in e and e["ph"] == "s":
            b, end = e.pop("span")
            e["ts"] = start_ns[e["id"]] = _inside(b, end, b)
    for _, e in timed:
        if "span" in e:
            b, end = e.pop("span")
            e["ts"] = _inside(b, end, max(b, start_ns.get(e["id"], b)))
    finished: set[int] = set()
    for _, e in timed:
        if e["ph"] == "f" and e["id"] in starts:
            finished.add(e["id"])
    events = []
    for seq, event in timed:
        ph = event["ph"]
        if ph in ("s", "f"):  # a flow is drawn from its start to its first finish, as Perfetto's UI does
            if event["id"] not in finished or (ph == "f" and event["id"] in seen_finish):
                continue
            if ph == "f":
                seen_finish.add(event["id"])
                event["name"] = starts[event["id"]]
        elif ph == "X" and event["cat"] == "api":
            event["args"].setdefault("result", "OL_SUCCESS")
        pid, tid = place.get(event.pop("track"), (API_PID, 0))
        shift = wall.get(seq, base) - base
        event["pid"], event["tid"] = pid, tid
        event["ts"] = round((event["ts"] + shift) / 1000.0, 3)
        if "dur" in event:
            event["dur"] = round(event["dur"] / 1000.0, 3)
        events.append(event)
    events.sort(key=lambda e: e["ts"])
    other: dict[str, Any] = {}
    if len(sessions) == 1:
        other = _identity(sequences[sessions[0]].session or {})
    else:
        other = {"clock_alignment": ALIGNMENT, "merged": [_merged(sequences[s].session or {}, (wall[s] - base) / 1000.0) for s in sessions]}
    return {"traceEvents": metadata + events, "displayTimeUnit": "ms", "otherData": other}


def _inside(begin: int, end: int, at: int) -> int:
    return min(max(at, begin + 1), end - 1) if end - begin >= 2 else begin


def _zero_wall(session: dict[str, Any]) -> int:
    """The wall-clock time of a session's origin (ts 0), in ns."""
    try:
        return int(session["wall_ns"]) + int(session["origin_ns"]) - int(session["perf_ns"])
    except (KeyError, TypeError, ValueError):
        raise PerfettoFormatError("the 'offload session' packet has no clock anchor") from None


def _identity(session: dict[str, Any]) -> dict[str, Any]:
    other: dict[str, Any] = {"producer": session.get("producer"), "device_timing": session.get("device_timing")}
    other[ANCHOR_KEY] = {k: session.get(k) for k in ("wall_ns", "perf_ns", "error_ns", "origin_ns")}
    if session.get("rank") is not None:
        other["rank"] = session["rank"]
    return other


def _merged(session: dict[str, Any], shift_us: float) -> dict[str, Any]:
    return {"rank": session.get("rank"), "shift_us": round(shift_us, 3), "anchor_error_us": round(int(session.get("error_ns", 0)) / 1000.0, 3)}


def load(path: str) -> dict[str, Any]:
    """The trace-event document of a binary timeline file."""
    with open(path, "rb") as f:
        return decode(f.read())


# --- merge -----------------------------------------------------------------------------------


def head_session(path: str) -> dict[str, Any]:
    """The ``offload session`` annotations of a binary file (read from its first packets)."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if not is_perfetto(head):
        raise MergeError(f"{path}: not a Perfetto trace")
    names: dict[int, str] = {}
    annotation_names: dict[int, str] = {}
    pos = 0
    try:
        while pos < len(head):
            tag, pos = _varint(head, pos)
            size, pos = _varint(head, pos)
            if tag != 0x0A or pos + size > len(head):
                break
            body = head[pos : pos + size]
            pos += size
            for field, value in fields(body):
                if field == 12:
                    for f2, v2 in fields(value):
                        table = {2: names, 3: annotation_names}.get(f2)
                        if table is not None:
                            entry = dict(fields(v2))
                            table[entry.get(1, 0)] = _text(entry.get(2, b""))
                elif field == 11:
                    event = fields(value)
                    name = next((names.get(v, "") for f3, v in event if f3 == 10), "")
                    if name == SESSION:
                        return _annotations([v for f3, v in event if f3 == 4], annotation_names)
    except PerfettoFormatError as error:
        raise MergeError(f"{path}: not a Perfetto trace: {error}") from None
    raise MergeError(f"{path}: no 'offload session' packet in its first {HEAD_BYTES} bytes: not a timeline written by offload")


def merge_files(paths: list[str], output: str) -> list[dict[str, Any]]:
    """Concatenate the binary timelines ``paths`` into ``output`` (written atomically, streamed in
    blocks); each input's rank, shift onto the earliest origin's wall clock and anchor error."""
    if not paths:
        raise MergeError("no files to merge")
    sessions = [(path, head_session(path)) for path in paths]
    seen: dict[Any, str] = {}
    for path, session in sessions:
        key = session.get("sequence")
        if key in seen:
            what = f"rank {session['rank']}" if session.get("rank") is not None else f"sequence {key}"
            raise MergeError(f"{path}: {what} is also that of {seen[key]}")
        seen[key] = path
    try:
        walls = [_zero_wall(session) for _, session in sessions]
    except PerfettoFormatError as error:
        raise MergeError(str(error)) from None

    def concatenate(out: IO[bytes]) -> None:
        for path in paths:
            with open(path, "rb") as f:
                while block := f.read(1 << 22):
                    out.write(block)

    write_atomically(output, "wb", concatenate)
    base = min(walls)
    info = []
    for (path, session), wall in zip(sessions, walls):
        info.append({"file": path, **_merged(session, (wall - base) / 1000.0)})
    return info
