"""What the timeline tests share (``OFFLOAD_TRACE=perfetto``): the job on the host device that
tests/test_timeline_content.py traces, a runner for traced jobs, and checks of the trace-event
format and of the ordering the file promises."""

from __future__ import annotations

import json
import pathlib
from collections import defaultdict
from typing import Any

from helpers import HOST_CHILD_PRELUDE


JOB = r"""
import ctypes, struct, sys, threading
""" + HOST_CHILD_PRELUDE + r"""
program, kernel = load_kernel("foo")
n = 1 << 15
a = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4 * n)
b = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4 * n)
buf = (ctypes.c_uint32 * n)()
q1, q2 = ol.olCreateQueue(host), ol.olCreateQueue(host)
ol.olMemFill(q1, a, b"\1\0\0\0", 4 * n)
ol.olMemcpy(q1, b, host, ctypes.addressof(buf), host, 4 * n)
ol.olLaunchKernel(q1, host, kernel, struct.pack("P", a), ol.KernelLaunchSizeArgs(1, (n // 64, 1, 1), (64, 1, 1)))
event = ol.olCreateEvent(q1)
ol.olWaitEvents(q2, [event])
def note(_):
    pass
ol.olLaunchHostFunction(q2, note, None)
ol.olMemcpy(q2, ctypes.addressof(buf), host, a, host, 4 * n)
ol.olSyncQueue(q2)
ol.olMemcpy(None, ctypes.addressof(buf), host, b, host, 4 * n)
ol.olMemFill(None, b, b"\0\0", 4 * n)
worker = threading.Thread(target=ol.olSyncQueue, args=(q1,), name="syncer")
worker.start(); worker.join()
try:
    ol.olMemAlloc(host, ol.AllocType.DEVICE, 0)
except ol.OffloadError:
    pass
ol.olDestroyEvent(event); ol.olDestroyQueue(q1); ol.olDestroyQueue(q2)
ol.olMemFree(a); ol.olMemFree(b); ol.olDestroyProgram(program)
ol.olShutDown()
"""

WORK = {"kernel", "memcpy", "fill", "host_function", "event_record", "event_wait"}


def run_job(run_python: Any, path: pathlib.Path, code: str = JOB) -> dict[str, Any]:
    """Run ``code`` (the JOB unless given) traced into the JSON timeline ``path``; its document."""
    proc = run_python(code, env={"OFFLOAD_TRACE": f"perfetto:{path}"})
    assert f"timeline written to {path}" in proc.stderr
    assert "--->" not in proc.stderr  # the perfetto form prints no per-call lines
    return json.loads(path.read_text())


def check_trace_event_format(document: Any) -> list[dict[str, Any]]:
    """The Chrome trace-event JSON format: what chrome://tracing and ui.perfetto.dev load."""
    assert isinstance(document, dict) and isinstance(document["traceEvents"], list)
    assert document.get("displayTimeUnit") in ("ms", "ns")
    flows: dict[Any, list[str]] = defaultdict(list)
    for e in document["traceEvents"]:
        assert isinstance(e["name"], str) and e["name"]
        assert e["ph"] in {"X", "M", "s", "f", "i"}
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}
            assert isinstance(e["args"], dict)
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            assert isinstance(e.get("args", {}), dict)
            assert isinstance(e["cat"], str)
        if e["ph"] in ("s", "f"):
            assert "id" in e and e["cat"] == "flow"
            flows[e["id"]].append(e["ph"])
            if e["ph"] == "f":
                assert e["bp"] == "e"
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t")
    for phases in flows.values():
        assert sorted(phases) == ["f", "s"]  # each flow is one start and one finish
    return list(document["traceEvents"])


def spans_of(events: list[dict[str, Any]], cats: set[str]) -> list[dict[str, Any]]:
    """The complete events ("X") of the categories ``cats``, in file order."""
    return [e for e in events if e["ph"] == "X" and e["cat"] in cats]


def covers(span: dict[str, Any], ts: float) -> bool:
    """Whether ``ts`` lies within ``span`` (a nanosecond of slack either side)."""
    return span["ts"] - 1e-3 <= ts <= span["ts"] + span["dur"] + 1e-3


def check_ordering(document: dict[str, Any]) -> None:
    """The ordering the file promises for the JOB: work in enqueue order on its queue's track, an
    arrow from each enqueuing call to its work, and the event's arrow from record to wait."""
    events = check_trace_event_format(document)
    work = spans_of(events, WORK)
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for w in work:
        by_track[(w["pid"], w["tid"])].append(w)
    for spans in by_track.values():  # in enqueue order, never overlapping
        for before, after in zip(spans, spans[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    calls = spans_of(events, {"api"})
    enqueue_flows = sorted(i for i, e in starts.items() if e["name"] == "enqueue")  # in enqueue order
    assert len(enqueue_flows) == len(work)  # one arrow from each enqueuing call to its work
    for track, spans in by_track.items():
        # each track's arrows, in enqueue order, end on its spans, in enqueue order: matched by
        # order, not by time (a span squeezed to no width under load shares its start with the
        # end of the span before it, and its arrow ends at that start)
        arrows = [i for i in enqueue_flows if (finishes[i]["pid"], finishes[i]["tid"]) == track]
        assert len(arrows) == len(spans), (track, arrows, spans)
        for target, flow_id in zip(spans, arrows):
            s, f = starts[flow_id], finishes[flow_id]
            (call,) = [c for c in calls if c["tid"] == s["tid"] and c["ts"] < s["ts"] < c["ts"] + c["dur"]]
            assert call["name"] in {"olMemFill", "olMemcpy", "olLaunchKernel", "olCreateEvent", "olWaitEvents", "olLaunchHostFunction"}
            assert covers(target, f["ts"]) and f["ts"] >= s["ts"] - 1e-3, (target, s, f)
            assert target["ts"] >= call["ts"] - 1e-3  # work never starts before the call that enqueued it
    (event_flow,) = [i for i, e in starts.items() if e["name"] == "event"]
    (record,) = spans_of(events, {"event_record"})
    (wait,) = spans_of(events, {"event_wait"})
    s, f = starts[event_flow], finishes[event_flow]
    assert (s["pid"], s["tid"]) == (record["pid"], record["tid"]) and covers(record, s["ts"])
    assert (f["pid"], f["tid"]) == (wait["pid"], wait["tid"]) and covers(wait, f["ts"]) and f["ts"] >= s["ts"] - 1e-3
    assert wait["ts"] + wait["dur"] >= record["ts"] + record["dur"] - 1e-3  # the wait ends after the record
