"""``offload trace FILE``: a summary of a timeline written by ``OFFLOAD_TRACE=perfetto`` (its
Perfetto binary form or its JSON form).

Calls per API (count, total and mean time, failures), time per kernel, bytes copied per
direction (with the throughput while copying), per queue the busy time and the idle gaps
between its first and last work, and the ``offload.build`` spans per cache outcome. Reads any Chrome trace-event JSON file; only the events that
offload writes (``cat`` ``api`` and the work categories) are counted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from .._trace.perfetto_read import PerfettoFormatError, decode, is_perfetto
from ._common import _ERROR_PREFIX, EXIT_NOTHING, EXIT_OK, _print_json, format_bytes, format_table, gb_per_s
from ._trace_merge import RankUsage, format_ranks, per_rank

WORK_CATEGORIES = ("kernel", "memcpy", "fill", "host_function", "event_record", "event_wait")


@dataclass
class Tally:
    count: int = 0
    total_us: float = 0.0
    failed: int = 0
    bytes: int = 0


@dataclass
class QueueUsage:
    track: str
    spans: int = 0
    busy_us: float = 0.0
    idle_us: float = 0.0
    gaps: int = 0
    largest_gap_us: float = 0.0


@dataclass
class Summary:
    api: dict[str, Tally] = field(default_factory=dict)
    kernels: dict[str, Tally] = field(default_factory=dict)
    copies: dict[str, Tally] = field(default_factory=dict)
    queues: list[QueueUsage] = field(default_factory=list)
    ranks: dict[str, RankUsage] = field(default_factory=dict)  # a merged job timeline: per rank
    builds: dict[str, Tally] = field(default_factory=dict)  # offload.build spans, per cache outcome (miss, hit, disk)


class TraceFormatError(ValueError):
    """The file is JSON but not a trace-event document this command can sum up."""


def load_events(path: str) -> list[dict[str, Any]]:
    """The events of a timeline file: Perfetto's binary form (``_trace.perfetto_read``) or a trace-event
    JSON file (an object with ``traceEvents``, or a bare list).

    ``OSError`` for an unreadable file, ``ValueError`` (``TraceFormatError`` included) for one
    that is not JSON, nested too deeply to parse, or not a trace-event document.
    """
    with open(path, "rb") as f:
        data = f.read()
    if is_perfetto(data):
        try:
            document: Any = decode(data)
        except PerfettoFormatError as error:
            raise TraceFormatError(f"not a timeline's Perfetto trace: {error}") from None
        return [e for e in document["traceEvents"] if isinstance(e, dict)]
    try:
        document = json.loads(data)
    except RecursionError:
        raise TraceFormatError("the JSON is nested too deeply to be a trace-event file") from None
    except UnicodeDecodeError as error:
        raise TraceFormatError(f"not UTF-8 text: {error.reason}") from None
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise TraceFormatError("not a trace-event file: no traceEvents list")
    return [e for e in events if isinstance(e, dict)]


def _number(event: dict[str, Any], key: str, index: int) -> float:
    """``event[key]`` as a finite number (absent: 0); ``TraceFormatError`` naming the event otherwise."""
    value = event.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TraceFormatError(f"event {index} ({str(event.get('name'))[:60]!r}): {key!r} is not a number: {str(value)[:60]!r}")
    return float(value)


def _args(event: dict[str, Any], index: int) -> dict[str, Any]:
    """``event["args"]`` (absent or null: empty); ``TraceFormatError`` for anything but an object."""
    value = event.get("args")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceFormatError(f"event {index} ({str(event.get('name'))[:60]!r}): 'args' is not an object")
    return value


def summarise(events: list[dict[str, Any]]) -> Summary:
    """Sum up ``events``; ``TraceFormatError`` names the first event whose fields are malformed."""
    summary = Summary()
    names: dict[tuple[Any, Any], str] = {}
    processes: dict[Any, str] = {}
    spans: dict[tuple[Any, Any], list[tuple[float, float]]] = defaultdict(list)
    for index, e in enumerate(events):
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(_key(e.get("pid")), _key(e.get("tid")))] = str(_args(e, index).get("name", ""))
        elif e.get("ph") == "M" and e.get("name") == "process_name":
            processes[_key(e.get("pid"))] = str(_args(e, index).get("name", ""))
        if e.get("ph") != "X":
            continue
        ts, dur = _number(e, "ts", index), _number(e, "dur", index)
        cat, name, args = e.get("cat"), str(e.get("name")), _args(e, index)
        if cat == "api":
            tally = summary.api.setdefault(name, Tally())
            tally.count += 1
            tally.total_us += dur
            tally.failed += args.get("result", "OL_SUCCESS") != "OL_SUCCESS"
            continue
        if cat == "build":
            tally = summary.builds.setdefault(str(args.get("cache", "?")), Tally())
            tally.count += 1
            tally.total_us += dur
            tally.failed += "result" in args
            continue
        if cat not in WORK_CATEGORIES:
            continue
        if cat == "kernel":
            tally = summary.kernels.setdefault(name, Tally())
            tally.count += 1
            tally.total_us += dur
        elif cat == "memcpy":
            tally = summary.copies.setdefault(str(args.get("direction", "?")), Tally())
            tally.count += 1
            tally.total_us += dur
            tally.bytes += int(_number(args, "bytes", index))
        spans[(_key(e.get("pid")), _key(e.get("tid")))].append((ts, ts + dur))
    for key in sorted(spans, key=lambda k: (str(k[0]), str(k[1]))):
        if names.get(key, "").startswith("synchronous"):
            continue  # work without a queue: no queue to be idle
        usage = QueueUsage(f"{processes.get(key[0], key[0])} / {names.get(key, key[1])}")
        ordered = sorted(spans[key])
        end = ordered[0][0]
        for start, stop in ordered:
            usage.spans += 1
            usage.busy_us += stop - start
            if start > end + 1e-3:  # the file's times have 1 ns resolution
                gap = start - end
                usage.idle_us += gap
                usage.gaps += 1
                usage.largest_gap_us = max(usage.largest_gap_us, gap)
            end = max(end, stop)
        summary.queues.append(usage)
    summary.ranks = per_rank(events)
    return summary


def _key(value: Any) -> Any:
    """A pid or tid usable as a dict key (a list or object in a malformed file becomes its text)."""
    return value if isinstance(value, (int, float, str, type(None))) else json.dumps(value, sort_keys=True)[:200]


def format_summary(summary: Summary) -> list[str]:
    lines = ["calls per API"]
    rows: list[tuple[str, ...]] = [("API", "CALLS", "FAILED", "TOTAL ms", "MEAN us")]
    for name, t in sorted(summary.api.items(), key=lambda kv: -kv[1].total_us):
        rows.append((name, str(t.count), str(t.failed), f"{t.total_us / 1e3:.3f}", f"{t.total_us / t.count:.1f}"))
    lines += format_table(rows, "  ") if len(rows) > 1 else ["  (none)"]
    lines.append("time per kernel")
    rows = [("KERNEL", "LAUNCHES", "TOTAL ms", "MEAN us")]
    for name, t in sorted(summary.kernels.items(), key=lambda kv: -kv[1].total_us):
        rows.append((name, str(t.count), f"{t.total_us / 1e3:.3f}", f"{t.total_us / t.count:.1f}"))
    lines += format_table(rows, "  ") if len(rows) > 1 else ["  (none)"]
    lines.append("bytes copied per direction")
    rows = [("DIRECTION", "COPIES", "BYTES", "TOTAL ms", "GB/s")]
    for name, t in sorted(summary.copies.items()):
        rows.append(
            (name, str(t.count), f"{t.bytes} ({format_bytes(t.bytes)})", f"{t.total_us / 1e3:.3f}", f"{gb_per_s(t.bytes, t.total_us / 1e6):.2f}")
        )
    lines += format_table(rows, "  ") if len(rows) > 1 else ["  (none)"]
    lines.append("idle gaps per queue")
    rows = [("QUEUE", "SPANS", "BUSY ms", "IDLE ms", "GAPS", "LARGEST GAP us")]
    for q in summary.queues:
        rows.append((q.track, str(q.spans), f"{q.busy_us / 1e3:.3f}", f"{q.idle_us / 1e3:.3f}", str(q.gaps), f"{q.largest_gap_us:.1f}"))
    lines += format_table(rows, "  ") if len(rows) > 1 else ["  (none)"]
    if summary.builds:  # (offload.build spans: shown where the file has any)
        lines.append("builds per cache outcome")
        rows = [("CACHE", "BUILDS", "FAILED", "TOTAL ms", "MEAN ms")]
        for name, t in sorted(summary.builds.items()):
            rows.append((name, str(t.count), str(t.failed), f"{t.total_us / 1e3:.3f}", f"{t.total_us / t.count / 1e3:.3f}"))
        lines += format_table(rows, "  ")
    return lines + format_ranks(summary.ranks)


def cmd_trace(args: argparse.Namespace, out: TextIO) -> int:
    try:
        summary = summarise(load_events(args.file))
    except (OSError, ValueError) as error:  # json.JSONDecodeError and TraceFormatError are ValueErrors
        print(f"{_ERROR_PREFIX}cannot read trace {args.file!r}: {error}", file=sys.stderr)
        return EXIT_NOTHING
    if args.json:
        _print_json(asdict(summary), out)
    else:
        print(f"offload trace: {args.file}", file=out)
        for line in format_summary(summary):
            print(line, file=out)
    return EXIT_OK
