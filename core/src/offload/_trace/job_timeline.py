"""One timeline for a whole job: each rank's clock anchor, and the merge of the ranks' files.

Each timeline file (``OFFLOAD_TRACE=perfetto:rank{rank}.json``) times its events in microseconds
from its session's first call on ``time.perf_counter_ns`` (CLOCK_MONOTONIC), a clock that means
nothing in another process on another node. So every file also records, in ``otherData``:

- ``rank``: the launcher's global rank (``offload._core.ranks``; absent outside a launcher);
- ``clock_anchor``: one wall-clock / monotonic pair read at ``olInit`` (``wall_ns`` from
  ``time.time_ns``, ``perf_ns`` the middle of the tightest of a few perf_counter brackets around
  it, ``error_ns`` half that bracket), and ``origin_ns``: the perf_counter time of ``ts`` 0.

``merge`` puts every file on the wall clock: an event at ``ts`` happened at wall time
``wall_ns + (origin_ns + ts*1000 - perf_ns)``, and the merged ``ts`` counts from the earliest
file's origin. The error of the alignment between two files is the difference of their hosts'
wall clocks (0 on one node: all ranks read the same CLOCK_REALTIME; across nodes whatever NTP or
PTP leaves, typically well under a millisecond with PTP and a few milliseconds with NTP) plus the
two anchors' ``error_ns`` (about a microsecond), plus the wall clock's drift against the
monotonic clock since the anchor (NTP slews at most 500 ppm: 0.5 ms per second of run, usually far
less). The merged file's ``otherData.merged`` lists each file's shift and anchor error.

In the merged file each rank is a group of processes: its pids are renumbered into
``rank_group * PID_STRIDE + pid`` (its API process and one per device, sorted together, rank by
rank), its process names start with ``rank N:``, and flow ids are made unique per rank.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from typing import IO, Any

PID_STRIDE = 1000
TRACK_BASE = 1_000_000  # _timeline's queue tracks: tid = pid * TRACK_BASE + queue number
ANCHOR_KEY = "clock_anchor"
ALIGNMENT = (
    "wall-clock anchor: each file records a time.time_ns / perf_counter_ns pair at olInit; files are "
    "shifted onto the wall clock (error: the hosts' wall-clock offset, 0 on one node, plus each anchor's error_ns)"
)


class MergeError(ValueError):
    """An input that cannot be merged; the message names the file and what is wrong."""


def write_atomically(output: str, mode: str, write: Callable[[IO[Any]], object]) -> None:
    """``output`` written whole or not at all: ``write`` fills a temporary file beside it (opened
    with ``mode``), which then replaces it. An OSError leaves no temporary file behind and raises a
    MergeError naming ``output``."""
    tmp = f"{output}.{os.getpid()}.tmp"
    try:
        with open(tmp, mode) as f:
            write(f)
        os.replace(tmp, output)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise MergeError(f"{output}: cannot write: {error.strerror or error}") from None


def clock_anchor(tries: int = 5) -> dict[str, int]:
    """A wall-clock reading and the monotonic time it was taken, from the tightest of ``tries``."""
    best: tuple[int, int, int] | None = None
    for _ in range(tries):
        before = time.perf_counter_ns()
        wall = time.time_ns()
        after = time.perf_counter_ns()
        if best is None or after - before < best[2] - best[1]:
            best = (wall, before, after)
    assert best is not None
    wall, before, after = best
    return {"wall_ns": wall, "perf_ns": (before + after) // 2, "error_ns": (after - before + 1) // 2}


def file_identity(rank: int | None, anchor: dict[str, int], origin_ns: int) -> dict[str, Any]:
    """The ``otherData`` entries that let ``merge`` place a file: its rank, anchor and origin."""
    identity: dict[str, Any] = {ANCHOR_KEY: dict(anchor, origin_ns=origin_ns)}
    if rank is not None:
        identity["rank"] = rank
    return identity


def _int_field(value: Any, what: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MergeError(f"{name}: {what} must be an integer, got {value!r}")
    return value


def _parts(name: str, document: Any) -> tuple[list[dict[str, Any]], int | None, int, int]:
    """A file's events, its rank (None: not named), its wall time of ts 0 in ns, and anchor error."""
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise MergeError(f"{name}: not a trace-event file (no traceEvents list)")
    other = document.get("otherData")
    anchor = other.get(ANCHOR_KEY) if isinstance(other, dict) else None
    if not isinstance(anchor, dict):
        raise MergeError(
            f"{name}: no otherData.{ANCHOR_KEY}: only timelines written by OFFLOAD_TRACE=perfetto "
            "(offload with clock anchors) can be aligned"
        )
    wall = _int_field(anchor.get("wall_ns"), f"{ANCHOR_KEY}.wall_ns", name)
    perf = _int_field(anchor.get("perf_ns"), f"{ANCHOR_KEY}.perf_ns", name)
    origin = _int_field(anchor.get("origin_ns"), f"{ANCHOR_KEY}.origin_ns", name)
    error = _int_field(anchor.get("error_ns", 0), f"{ANCHOR_KEY}.error_ns", name)
    rank = other.get("rank") if isinstance(other, dict) else None
    if rank is not None:
        rank = _int_field(rank, "otherData.rank", name)
    events: list[dict[str, Any]] = []
    for index, event in enumerate(document["traceEvents"]):
        if not isinstance(event, dict):
            raise MergeError(f"{name}: traceEvents[{index}] is not an object")
        for key in ("ts", "dur"):
            value = event.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
                raise MergeError(f"{name}: traceEvents[{index}].{key} must be a finite number, got {value!r}")
        events.append(event)
    return events, rank, wall - perf + origin, error


def merge(documents: list[tuple[str, Any]]) -> dict[str, Any]:
    """One trace-event document from ``(name, document)`` pairs of rank files (MergeError if not).

    Ranks come from each file's ``otherData.rank`` (files without one are numbered after the
    highest named rank, in the order given); two files of one rank are refused.
    """
    if not documents:
        raise MergeError("no files to merge")
    parsed = [(name, *_parts(name, document)) for name, document in documents]
    named = [rank for _, _, rank, _, _ in parsed if rank is not None]
    next_rank = max(named, default=-1) + 1
    seen: dict[int, str] = {}
    placed: list[tuple[int, str, list[dict[str, Any]], int, int]] = []
    for name, events, rank, zero_wall, error in parsed:
        if rank is None:
            rank, next_rank = next_rank, next_rank + 1
        if rank in seen:
            raise MergeError(f"{name}: rank {rank} is also the rank of {seen[rank]}")
        seen[rank] = name
        placed.append((rank, name, events, zero_wall, error))
    placed.sort(key=lambda item: item[0])
    base = min(item[3] for item in placed)
    metadata: list[dict[str, Any]] = []
    timed: list[dict[str, Any]] = []
    merged_info: list[dict[str, Any]] = []
    for group, (rank, name, events, zero_wall, error) in enumerate(placed):
        shift_us = (zero_wall - base) / 1000.0
        pids: dict[Any, Any] = {}
        sorted_pids: set[Any] = set()
        for event in events:
            out = dict(event)
            old_pid = event.get("pid")
            new_pid = pids.get(old_pid)
            if new_pid is None:
                new_pid = pids[old_pid] = _new_pid(group, old_pid, len(pids))
            out["pid"] = new_pid
            tid = event.get("tid")
            if isinstance(old_pid, int) and isinstance(tid, int) and not isinstance(tid, bool) and tid // TRACK_BASE == old_pid > 0:
                out["tid"] = new_pid * TRACK_BASE + tid % TRACK_BASE  # a queue track of a renumbered device
            if "id" in event and event.get("ph") in ("s", "t", "f"):
                flow = event["id"]
                out["id"] = (group << 32) + flow if isinstance(flow, int) and not isinstance(flow, bool) else f"rank{rank}:{flow}"
            if event.get("ph") == "M":
                args = dict(event.get("args") or {})
                if event.get("name") == "process_name":
                    label = str(args.get("name", ""))
                    args["name"] = label if label.startswith(f"rank {rank}:") else f"rank {rank}: {label}"
                elif event.get("name") == "process_sort_index":
                    sort = args.get("sort_index", 0)
                    args["sort_index"] = group * PID_STRIDE + (sort if isinstance(sort, int) else 0)
                    sorted_pids.add(new_pid)
                out["args"] = args
                metadata.append(out)
                continue
            if "ts" in event:
                out["ts"] = round(event["ts"] + shift_us, 3)
            timed.append(out)
        for old_pid, new_pid in pids.items():
            if new_pid not in sorted_pids:
                metadata.append({"name": "process_sort_index", "ph": "M", "pid": new_pid, "tid": 0, "args": {"sort_index": new_pid}})
        merged_info.append({"file": name, "rank": rank, "shift_us": round(shift_us, 3), "anchor_error_us": round(error / 1000.0, 3)})
    timed.sort(key=lambda e: e.get("ts", 0.0))  # stable: each rank's order of equal times is kept
    return {
        "traceEvents": metadata + timed,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "offload trace merge", "clock_alignment": ALIGNMENT, "merged": merged_info},
    }


def _new_pid(group: int, pid: Any, ordinal: int) -> int:
    """``pid`` of a rank's file in the merged file: kept within the rank's group of PID_STRIDE."""
    if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < PID_STRIDE:
        return group * PID_STRIDE + pid
    return group * PID_STRIDE + PID_STRIDE - 1 - ordinal % (PID_STRIDE // 10)  # a foreign pid: from the top down


def rank_of_process(name: str) -> str | None:
    """The ``rank N`` a process name starts with (as the timeline and merge write them), or None."""
    head, sep, _ = name.partition(":")
    if sep and head.startswith("rank ") and head[5:].isdigit():
        return head
    return None
