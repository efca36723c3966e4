"""The timeline's file: its trace events from what a ``timeline.Timeline`` recorded, and where
``OFFLOAD_TRACE=perfetto[:PATH]`` puts it.

Promises the file keeps (and the tests check): times are microseconds from the session's first
call (``ts`` >= 0); on each queue track the spans appear in enqueue order and do not overlap; a
work span never starts before its enqueuing call; each ``enqueue`` flow starts inside its call's
span (1 ns after its start) and ends inside its work's span (1 ns after the later of the work's
start and the flow's start); each ``event`` flow starts inside the record's span and ends inside
the wait's span, where the event completed; every flow's end is not before its start (flows sit
strictly inside their spans, where a span is 2 ns or longer, so that every viewer binds them).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from .._core import ranks as _ranks
from .timeline_work import API_PID, TRACK_BASE, Work


def trace_events(
    calls: list[Any], threads: dict[int, str], work: list[Work], devices: list[tuple[int, str]],
    queues: dict[tuple[int, int], str], origin: int, rank: int | None, flows: Iterator[int],
) -> list[dict[str, Any]]:  # fmt: skip
    """The trace events of what a timeline recorded (a snapshot): metadata, API spans, work spans
    and flows, times in microseconds from ``origin``; ``flows`` numbers the event flows."""
    who = "" if rank is None else f"rank {rank}: "

    def us(ns: int) -> float:
        return round((ns - origin) / 1000.0, 3)

    def span(begin: int, end: int) -> float:  # from the rounded ends, so nesting survives rounding
        return round(us(end) - us(begin), 3)

    def inside(begin: int, end: int, at: int) -> int:
        """``at`` moved 1 ns inside [begin, end] where the span allows, so that a flow binds to
        its slice whatever order a viewer gives events of equal timestamps."""
        return min(max(at, begin + 1), end - 1) if end - begin >= 2 else begin

    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": API_PID, "tid": 0, "args": {"name": f"{who}offload API (pid {os.getpid()})"}},
        {"name": "process_sort_index", "ph": "M", "pid": API_PID, "tid": 0, "args": {"sort_index": 0}},
    ]
    for tid, name in threads.items():
        out.append({"name": "thread_name", "ph": "M", "pid": API_PID, "tid": tid, "args": {"name": name}})
    for pid, label in devices:
        out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": who + label}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
    for (pid, tid), label in queues.items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid % TRACK_BASE}})
    flow_at: dict[int, tuple[int, int]] = {}  # flow id -> (time in its call, thread)
    for name, tid, start, dur, args, flow, cat in calls:
        out.append({"name": name, "cat": cat, "ph": "X", "pid": API_PID, "tid": tid, "ts": us(start), "dur": span(start, start + dur), "args": args})
        if flow:
            flow_at[flow] = (inside(start, start + dur, start), tid)
    last_end: dict[tuple[int, int], int] = {}
    placed: dict[int, tuple[int, int]] = {}  # id(work) -> (begin, end) as drawn
    unfinished = 0
    for item in work:  # in enqueue order
        key = (item.pid, item.tid)
        end = item.end_ns
        if item.event_end_ns is not None:
            end = item.event_end_ns if end is None else min(end, item.event_end_ns)
        if end is None:
            unfinished += 1
            continue
        begin = max(item.submit_ns, last_end.get(key, item.submit_ns))
        # never before its start, nor (a wait) before the work it waits for: the stamps of
        # different sources (callbacks, anchored events) disagree by scheduling delays under load
        end = max(end, begin, *(placed[id(s)][1] for s in item.sources if id(s) in placed))
        last_end[key] = end
        placed[id(item)] = (begin, end)
        args = dict(item.args)
        args["timing"] = item.timing
        out.append({"name": item.name, "cat": item.cat, "ph": "X", "pid": item.pid, "tid": item.tid, "ts": us(begin), "dur": span(begin, end), "args": args})
        if item.flow and item.flow in flow_at:
            at, tid = flow_at[item.flow]
            to = inside(begin, end, max(begin, at))
            out.append({"name": "enqueue", "cat": "flow", "ph": "s", "id": item.flow, "pid": API_PID, "tid": tid, "ts": us(at)})
            out.append({"name": "enqueue", "cat": "flow", "ph": "f", "bp": "e", "id": item.flow, "pid": item.pid, "tid": item.tid, "ts": us(to)})
    for item in work:
        for source in item.sources:
            if id(item) in placed and id(source) in placed:
                # from the record's span to the point of the wait's span where the event completed
                flow = next(flows)
                (src_begin, src_end), (dst_begin, dst_end) = placed[id(source)], placed[id(item)]
                at = inside(src_begin, src_end, src_begin)
                to = inside(dst_begin, dst_end, max(src_end, at))
                out.append({"name": "event", "cat": "flow", "ph": "s", "id": flow, "pid": source.pid, "tid": source.tid, "ts": us(at)})
                out.append({"name": "event", "cat": "flow", "ph": "f", "bp": "e", "id": flow, "pid": item.pid, "tid": item.tid, "ts": us(to)})
    if unfinished:
        out.append({"name": f"{unfinished} work item(s) unfinished when the file was written", "ph": "i", "s": "g", "pid": API_PID, "tid": 0, "ts": us(time.perf_counter_ns())})
    return out


def path_from_setting(setting: str) -> str | None:
    """The file for an ``OFFLOAD_TRACE`` value of the perfetto form, None for any other value;
    ``{rank}`` in the path is the launcher's rank (the pid outside one), ``{pid}`` the pid."""
    text = setting.strip()
    head, _, path = text.partition(":")
    if head.lower() != "perfetto":
        return None
    path = path.strip()
    if not path:
        path = "offload-trace-{pid}.pftrace"
    return os.path.abspath(os.path.expanduser(_ranks.expand(path)))


def multiprocessing_exit(flush: Callable[[], None]) -> Any:
    """In a child process of ``multiprocessing``: ``flush`` registered to run with multiprocessing's
    finalizers when the child's target returns (a child started by fork or forkserver then leaves
    through ``os._exit``, without exit handlers); the registration, or None in any other process.
    A pool's worker terminated by its pool runs none of them: its tasks call ``flush_trace``."""
    process = sys.modules.get("multiprocessing.process")
    util = sys.modules.get("multiprocessing.util")
    if process is None or util is None or process.parent_process() is None:
        return None
    return util.Finalize(None, flush, exitpriority=0)
