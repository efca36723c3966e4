"""The timeline (``OFFLOAD_TRACE=perfetto``): the trace-event format, the ordering it promises,
its content for a real job on the host device, when it is written, and ``offload trace``."""

from __future__ import annotations

import json
import pathlib
from collections import defaultdict
from typing import Any

import pytest
from helpers import child_environ, HOST_CHILD_PRELUDE

from offload import cli
from offload.cli import _trace

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


def _run_job(run_python: Any, path: pathlib.Path, code: str = JOB) -> dict[str, Any]:
    proc = run_python(code, env={"OFFLOAD_TRACE": f"perfetto:{path}"})
    assert f"timeline written to {path}" in proc.stderr
    assert "--->" not in proc.stderr  # the perfetto form prints no per-call lines
    return json.loads(path.read_text())


@pytest.fixture(scope="module", params=["json", "pftrace"])
def job_trace(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> tuple[pathlib.Path, dict[str, Any]]:
    """The JOB's timeline in both forms: JSON (a .json path) and Perfetto's binary trace (any
    other name), the latter read back as trace events by ``offload._trace.perfetto_read``."""
    import os
    import subprocess
    import sys

    from offload._trace.perfetto_read import load

    path = tmp_path_factory.mktemp("timeline") / f"job.{request.param}"
    env = child_environ("OFFLOAD_")
    env["OFFLOAD_TRACE"] = f"perfetto:{path}"
    proc = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return path, (json.loads(path.read_text()) if request.param == "json" else load(str(path)))


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


def _spans(events: list[dict[str, Any]], cats: set[str]) -> list[dict[str, Any]]:
    return [e for e in events if e["ph"] == "X" and e["cat"] in cats]


def _covers(span: dict[str, Any], ts: float) -> bool:
    return span["ts"] - 1e-3 <= ts <= span["ts"] + span["dur"] + 1e-3


def test_the_file_is_trace_event_json(job_trace: tuple[pathlib.Path, dict[str, Any]]) -> None:
    path, document = job_trace
    check_trace_event_format(document)
    json.dumps(document, allow_nan=False)  # strict JSON: no NaN or Infinity
    assert "backend events" in document["otherData"]["device_timing"]
    if path.suffix == ".json":  # (the binary form names the timing source once, not per work item)
        from offload._core.native import ENABLED

        timings = {e["args"]["timing"] for e in document["traceEvents"] if e["ph"] == "X" and e["cat"] in WORK}
        if ENABLED:  # the host queues stamp the work themselves (no event, no callback)
            assert timings <= {"queue stamp", "within its call"} and "queue stamp" in timings
        else:
            assert timings <= {"backend events", "completion callback", "within its call"}


def test_every_api_call_is_a_span_on_its_thread(job_trace: tuple[pathlib.Path, dict[str, Any]]) -> None:
    path, document = job_trace
    events = check_trace_event_format(document)
    calls = _spans(events, {"api"})
    names = [c["name"] for c in calls]
    assert names[0] == "olInit" and names[-1] == "olShutDown"
    assert names.count("olMemcpy") == 3 and names.count("olSyncQueue") == 2
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == calls[0]["pid"]}
    (sync_on_thread,) = [c for c in calls if threads[c["tid"]] == "syncer"]
    assert sync_on_thread["name"] == "olSyncQueue"
    (failed,) = [c for c in calls if c["args"]["result"] != "OL_SUCCESS"]
    assert failed["name"] == "olMemAlloc" and failed["args"]["result"] == "OL_ERRC_INVALID_SIZE"
    assert failed["args"]["details"] == "validation failure: Size == 0"
    if path.suffix == ".json":  # (the binary form keeps a failed call's result and details, not its parameters)
        assert failed["args"]["Type"] == "OL_ALLOC_TYPE_DEVICE"
    by_thread: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for c in calls:
        by_thread[c["tid"]].append(c)
    for spans in by_thread.values():  # calls on one thread follow each other (none nest here)
        for before, after in zip(spans, spans[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-3


def test_device_work_is_on_one_track_per_queue(job_trace: tuple[pathlib.Path, dict[str, Any]]) -> None:
    path, document = job_trace
    events = check_trace_event_format(document)
    work = _spans(events, WORK)
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    by_track: dict[str, list[str]] = defaultdict(list)
    for w in work:
        by_track[tracks[(w["pid"], w["tid"])]].append(w["cat"])
    assert by_track == {
        "queue #1": ["fill", "memcpy", "kernel", "event_record"],
        "queue #2": ["event_wait", "host_function", "memcpy"],
        "synchronous (no queue)": ["memcpy", "fill"],
    }
    (kernel,) = _spans(events, {"kernel"})
    assert kernel["name"] == "foo"
    if path.suffix == ".json":
        assert kernel["args"]["num_groups"] == [512, 1, 1] and kernel["args"]["group_size"] == [64, 1, 1]
    else:  # the binary form's fixed records: the products
        assert kernel["args"]["groups"] == 512 and kernel["args"]["group_size"] == 64
    assert kernel["args"]["argument_bytes"] == 8
    copies = _spans(events, {"memcpy"})
    assert {c["args"]["bytes"] for c in copies} == {4 << 15} and {c["args"]["direction"] for c in copies} == {"HtoH"}
    fill, sync_fill = _spans(events, {"fill"})
    assert fill["args"]["bytes"] == 4 << 15 and fill["args"]["pattern_bytes"] == 4
    assert tracks[(sync_fill["pid"], sync_fill["tid"])] == "synchronous (no queue)" and sync_fill["args"]["pattern_bytes"] == 2
    (host_fn,) = _spans(events, {"host_function"})
    assert host_fn["name"] == "host function note"
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert processes[kernel["pid"]].startswith("device host:0")


def test_the_ordering_the_file_promises(job_trace: tuple[pathlib.Path, dict[str, Any]]) -> None:
    _check_ordering(job_trace[1])


#: A loaded machine, made on purpose: the device clock's anchor read 2 ms after its event completed
#: (the sync woke late), and the completion callbacks of the kernel and the event record on q1
#: stamped 5 ms late (their thread scheduled late) while q2's were on time.
_LATE_STAMPS = """
import time
import offload._trace.timeline as _timeline, offload._trace.timeline_work as _work
_anchor = _timeline.anchor_clock
def late_anchor(device):
    clock = _anchor(device)
    if clock is not None:
        clock.anchor_ns += 2_000_000
    return clock
_timeline.anchor_clock = late_anchor
def late_callback(self):
    self.end_ns = time.perf_counter_ns() + (5_000_000 if self.cat in ("kernel", "event_record") else 0)
_work.Work.complete = late_callback
"""


def test_the_ordering_holds_when_stamps_arrive_late(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Work timed by stamps that disagree as they do under load (anchored events late by the
    anchor's wake-up, callbacks late by their scheduling): the record after the kernel is drawn
    with no width and still takes its arrow, and the wait on q2 still ends after the record it
    waits for (the writer never draws it earlier). Both broke this test's ordering checks before."""
    path = tmp_path / "late.json"
    proc = run_python(_LATE_STAMPS + JOB, env={"OFFLOAD_TRACE": f"perfetto:{path}"})
    assert f"timeline written to {path}" in proc.stderr
    _check_ordering(json.loads(path.read_text()))


def _check_ordering(document: dict[str, Any]) -> None:
    events = check_trace_event_format(document)
    work = _spans(events, WORK)
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for w in work:
        by_track[(w["pid"], w["tid"])].append(w)
    for spans in by_track.values():  # in enqueue order, never overlapping
        for before, after in zip(spans, spans[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    calls = _spans(events, {"api"})
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
            assert _covers(target, f["ts"]) and f["ts"] >= s["ts"] - 1e-3, (target, s, f)
            assert target["ts"] >= call["ts"] - 1e-3  # work never starts before the call that enqueued it
    (event_flow,) = [i for i, e in starts.items() if e["name"] == "event"]
    (record,) = _spans(events, {"event_record"})
    (wait,) = _spans(events, {"event_wait"})
    s, f = starts[event_flow], finishes[event_flow]
    assert (s["pid"], s["tid"]) == (record["pid"], record["tid"]) and _covers(record, s["ts"])
    assert (f["pid"], f["tid"]) == (wait["pid"], wait["tid"]) and _covers(wait, f["ts"]) and f["ts"] >= s["ts"] - 1e-3
    assert wait["ts"] + wait["dur"] >= record["ts"] + record["dur"] - 1e-3  # the wait ends after the record


def test_written_only_at_the_final_shutdown_and_at_exit(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "nested.json"
    code = f"""
import os, offload as ol
ol.olInit(); ol.olInit()
ol.olShutDown()
assert not os.path.exists({str(path)!r}), "written at a non-final olShutDown"
ol.olShutDown()
assert os.path.exists({str(path)!r})
"""
    document = _run_job(run_python, path, code)
    names = [e["name"] for e in check_trace_event_format(document) if e["ph"] == "X"]
    assert names == ["olInit", "olInit", "olShutDown", "olShutDown"]
    path = tmp_path / "atexit.json"
    document = _run_job(run_python, path, "import offload as ol\nol.olInit()\n")  # never shut down
    assert [e["name"] for e in check_trace_event_format(document) if e["ph"] == "X"] == ["olInit"]


def test_bare_perfetto_writes_into_the_working_directory(run_python: Any, tmp_path: pathlib.Path) -> None:
    code = f"import os, offload as ol\nos.chdir({str(tmp_path)!r})\nol.olInit()\nol.olShutDown()\nprint(os.getpid())"
    proc = run_python(code, env={"OFFLOAD_TRACE": "perfetto"})
    path = tmp_path / f"offload-trace-{proc.stdout.strip()}.pftrace"  # the default: Perfetto's binary trace
    assert path.exists(), proc.stderr
    from offload._trace.perfetto_read import load

    check_trace_event_format(load(str(path)))


def test_offload_trace_summarises_the_file(job_trace: tuple[pathlib.Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    path, document = job_trace
    events = document["traceEvents"]
    summary = _trace.summarise(events)
    assert summary.api["olMemcpy"].count == 3 and summary.api["olMemAlloc"].failed == 1
    assert summary.kernels["foo"].count == 1
    (kernel,) = _spans(events, {"kernel"})
    assert summary.kernels["foo"].total_us == pytest.approx(kernel["dur"])
    assert summary.copies["HtoH"].bytes == 3 * (4 << 15) and summary.copies["HtoH"].count == 3
    assert [q.track.split(" / ")[1] for q in summary.queues] == ["queue #1", "queue #2"]
    for q in summary.queues:
        assert q.idle_us >= 0 and q.busy_us > 0
    q2 = summary.queues[1]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = sorted((w["ts"], w["ts"] + w["dur"]) for w in _spans(events, WORK) if tracks[(w["pid"], w["tid"])] == "queue #2")
    assert q2.idle_us == pytest.approx(sum(max(0.0, b[0] - a[1]) for a, b in zip(spans, spans[1:])), abs=2e-3)

    assert cli.main(["trace", str(path)]) == 0
    out = capsys.readouterr().out
    for heading in ("calls per API", "time per kernel", "bytes copied per direction", "idle gaps per queue"):
        assert heading in out
    assert any(line.split()[:2] == ["foo", "1"] for line in out.splitlines())
    assert any(line.split()[:3] == ["HtoH", "3", str(3 * (4 << 15))] for line in out.splitlines())
    assert cli.main(["trace", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["copies"]["HtoH"]["bytes"] == 3 * (4 << 15)


def test_offload_trace_rejects_a_file_that_is_not_a_trace(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": "events"}')
    assert cli.main(["trace", str(bad)]) == 2
    assert "not a trace-event file" in capsys.readouterr().err
    assert cli.main(["trace", str(tmp_path / "missing.json")]) == 2


def test_a_failed_olinit_writes_no_file(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "failed.json"
    code = "import offload as ol\ntry:\n    ol.olInit()\nexcept ol.OffloadError:\n    pass\nelse:\n    raise SystemExit('olInit should have failed')\n"
    proc = run_python(code, env={"OFFLOAD_TRACE": f"perfetto:{path}", "OFFLOAD_BACKENDS": "nosuch", "OFFLOAD_BACKENDS_STRICT": "1"})
    assert not path.exists() and "timeline written" not in proc.stderr


THREADS_JOB = r"""
import struct, threading
""" + HOST_CHILD_PRELUDE + r"""
program, kernel = load_kernel("noargs")
def work():
    queue = ol.olCreateQueue(host)
    for _ in range(25):
        ol.olLaunchKernel(queue, host, kernel, None, ol.KernelLaunchSizeArgs(1, (4, 1, 1), (1, 1, 1)))
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
ol.olDestroyProgram(program)
ol.olShutDown()
"""


def test_many_threads_and_queues_keep_the_promises(run_python: Any, tmp_path: pathlib.Path) -> None:
    events = check_trace_event_format(_run_job(run_python, tmp_path / "threads.json", THREADS_JOB))
    kernels = _spans(events, {"kernel"})
    assert len(kernels) == 100
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for k in kernels:
        by_track[(k["pid"], k["tid"])].append(k)
    assert sorted(len(v) for v in by_track.values()) == [25, 25, 25, 25]
    for spans in by_track.values():
        for before, after in zip(spans, spans[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    launches = [c for c in _spans(events, {"api"}) if c["name"] == "olLaunchKernel"]
    assert len({c["tid"] for c in launches}) == 4  # each thread's calls on its own track
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(finishes) == 100
    assert all(finishes[i]["ts"] >= starts[i]["ts"] for i in starts)


def test_the_setting_forms(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    import os

    from offload._trace.timeline_file import path_from_setting

    monkeypatch.chdir(tmp_path)
    default = str(tmp_path / f"offload-trace-{os.getpid()}.pftrace")
    assert path_from_setting("perfetto") == path_from_setting("perfetto:") == path_from_setting(" Perfetto ") == default
    assert path_from_setting("perfetto:/x/y.json") == "/x/y.json"
    assert path_from_setting("perfetto:rel.json") == str(tmp_path / "rel.json")
    assert path_from_setting("1") is None and path_from_setting("json") is None and path_from_setting("") is None


def test_the_main_job_timeline(run_python: Any, tmp_path: pathlib.Path) -> None:
    """`offload selfcheck` (what scripts/main.sh runs) traced: its copies, fills, kernel and events."""
    path = tmp_path / "main.json"
    code = "import sys\nfrom offload.cli import main\nsys.exit(main(['selfcheck', '--platform', 'host', '--size', '4096']))"
    events = check_trace_event_format(_run_job(run_python, path, code))
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    work = [(tracks[(w["pid"], w["tid"])], w["cat"], w["name"]) for w in _spans(events, WORK)]
    assert work == [
        ("synchronous (no queue)", "fill", "fill"),  # first touch of x, then y
        ("synchronous (no queue)", "fill", "fill"),
        ("synchronous (no queue)", "memcpy", "memcpy HtoH"),  # copy in x, y
        ("synchronous (no queue)", "memcpy", "memcpy HtoH"),
        ("queue #1", "host_function", "host function _nothing"),  # the queue's warm-up
        ("queue #1", "event_record", "event record"),
        ("queue #1", "kernel", "saxpy"),
        ("queue #1", "event_record", "event record"),
        ("synchronous (no queue)", "memcpy", "memcpy HtoH"),  # copy out
    ]
    (kernel,) = _spans(events, {"kernel"})
    assert kernel["args"]["num_groups"][0] * kernel["args"]["group_size"][0] >= 4096
    summary = _trace.summarise(events)
    assert summary.copies["HtoH"].bytes == 3 * 4 * 4096 and summary.kernels["saxpy"].count == 1


BLOCKED_JOB = r"""
import struct, threading
""" + HOST_CHILD_PRELUDE + r"""
program, kernel = load_kernel("noargs")
gate = threading.Event()
queue = ol.olCreateQueue(host)
ol.olLaunchHostFunction(queue, lambda _: gate.wait(), None)
for _ in range(3):
    ol.olLaunchKernel(queue, host, kernel, None, ol.KernelLaunchSizeArgs(1, (2, 1, 1), (1, 1, 1)))
start = ol.olCreateEvent(queue)
ol.olLaunchKernel(queue, host, kernel, None, ol.KernelLaunchSizeArgs(1, (2, 1, 1), (1, 1, 1)))
gate.set()
ol.olSyncQueue(queue)
ol.olDestroyEvent(start)
ol.olDestroyQueue(queue)
ol.olDestroyProgram(program)
ol.olShutDown()
"""


def test_work_behind_a_busy_queue_is_timed_by_backend_events(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Work still queued when its call returned gets its end from the tracer's backend events (on
    the compiled path, from the host queue's own stamp)."""
    from offload._core.native import ENABLED

    events = check_trace_event_format(_run_job(run_python, tmp_path / "blocked.json", BLOCKED_JOB))
    work = _spans(events, WORK)
    assert [w["cat"] for w in work] == ["host_function", "kernel", "kernel", "kernel", "event_record", "kernel"]
    timing = "queue stamp" if ENABLED else "backend events"
    assert all(w["args"]["timing"] == timing for w in work), [w["args"]["timing"] for w in work]
    (sync,) = [c for c in _spans(events, {"api"}) if c["name"] == "olSyncQueue"]
    for w in work:  # the event clock maps onto the API clock: all done by the time olSyncQueue returned
        assert w["ts"] + w["dur"] <= sync["ts"] + sync["dur"] + 1e-3
    blocker = work[0]
    assert work[1]["ts"] >= blocker["ts"] + blocker["dur"] - 1e-3
    for before, after in zip(work, work[1:]):
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-3


DEFERRED_JOB = r"""
import ctypes
import offload as ol

class Deferred:
    '''A device whose queue runs its work only at synchronize (no events).'''

    @ol.hookimpl
    def init(self):
        self.memory = {}
        return ["dev"]

    @ol.hookimpl
    def deinit(self):
        pass

    @ol.hookimpl
    def get_device_info(self, device):
        return {ol.DeviceInfo.NAME: "deferred"}

    @ol.hookimpl
    def load_binary(self, device, data):
        return data

    @ol.hookimpl
    def unload_binary(self, device, image):
        pass

    @ol.hookimpl
    def create_queue(self, device):
        return []

    @ol.hookimpl
    def synchronize(self, device, queue, release):
        while queue:
            queue.pop(0)()

    @ol.hookimpl
    def has_pending_work(self, device, queue):
        return bool(queue)

    @ol.hookimpl
    def mem_alloc(self, device, alloc_type, size):
        buf = ctypes.create_string_buffer(size)
        self.memory[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    @ol.hookimpl
    def mem_free(self, device, address):
        del self.memory[address]

    @ol.hookimpl
    def data_fill(self, device, address, pattern, size, queue):
        job = lambda: ctypes.memmove(address, pattern * (size // len(pattern)), size)
        job() if queue is None else queue.append(job)

class DeferredWithHostCalls(Deferred):
    @ol.hookimpl
    def enqueue_host_call(self, device, queue, callback):
        queue.append(callback)

ol.register_backend("deferred", DeferredWithHostCalls if WITH_HOST_CALLS else Deferred)
import os
os.environ["OFFLOAD_BACKENDS"] = "deferred"
os.environ["OFFLOAD_BACKENDS_STRICT"] = "1"
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
(device,) = found
queue = ol.olCreateQueue(device)
ptr = ol.olMemAlloc(device, ol.AllocType.DEVICE, 64)
ol.olMemFill(queue, ptr, b"\x01", 64)
ol.olSyncQueue(queue)
ol.olDestroyQueue(queue)
ol.olMemFree(ptr)
ol.olShutDown()
"""


@pytest.mark.parametrize(("host_calls", "timing"), [(True, "completion callback"), (False, "unknown")])
def test_backends_without_events_are_timed_by_callbacks_or_marked_unknown(
    host_calls: bool, timing: str, run_python: Any, tmp_path: pathlib.Path
) -> None:
    code = f"WITH_HOST_CALLS = {host_calls}\n" + DEFERRED_JOB
    events = check_trace_event_format(_run_job(run_python, tmp_path / "deferred.json", code))
    (fill,) = _spans(events, {"fill"})
    assert fill["args"]["timing"] == timing and fill["args"]["bytes"] == 64
    (sync,) = [c for c in _spans(events, {"api"}) if c["name"] == "olSyncQueue"]
    if host_calls:  # the deferred queue ran the fill inside olSyncQueue, and the callback right after it
        assert sync["ts"] - 1e-3 <= fill["ts"] + fill["dur"] <= sync["ts"] + sync["dur"] + 1e-3
    else:
        assert fill["dur"] == 0
