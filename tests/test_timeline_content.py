"""The timeline's content (``OFFLOAD_TRACE=perfetto``) for real jobs on the host device, in both
forms: calls on their threads, device work on one track per queue, the ordering the file
promises (late stamps too), many threads, ``offload selfcheck``, and ``offload trace``."""

from __future__ import annotations

import json
import pathlib
from collections import defaultdict
from typing import Any

import pytest
from helpers import child_environ, HOST_CHILD_PRELUDE

from offload import cli
from offload.cli import _trace

from timeline_checks import JOB, WORK, check_ordering, check_trace_event_format, run_job, spans_of


@pytest.fixture(scope="module", params=["json", "pftrace"])
def job_trace(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> tuple[pathlib.Path, dict[str, Any]]:
    """The JOB's timeline in both forms: JSON (a .json path) and Perfetto's binary trace (any
    other name), the latter read back as trace events by ``offload._trace.perfetto_read``."""
    import subprocess
    import sys

    from offload._trace.perfetto_read import load

    path = tmp_path_factory.mktemp("timeline") / f"job.{request.param}"
    env = child_environ("OFFLOAD_")
    env["OFFLOAD_TRACE"] = f"perfetto:{path}"
    proc = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return path, (json.loads(path.read_text()) if request.param == "json" else load(str(path)))


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
    calls = spans_of(events, {"api"})
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
    work = spans_of(events, WORK)
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    by_track: dict[str, list[str]] = defaultdict(list)
    for w in work:
        by_track[tracks[(w["pid"], w["tid"])]].append(w["cat"])
    assert by_track == {
        "queue #1": ["fill", "memcpy", "kernel", "event_record"],
        "queue #2": ["event_wait", "host_function", "memcpy"],
        "synchronous (no queue)": ["memcpy", "fill"],
    }
    (kernel,) = spans_of(events, {"kernel"})
    assert kernel["name"] == "foo"
    if path.suffix == ".json":
        assert kernel["args"]["num_groups"] == [512, 1, 1] and kernel["args"]["group_size"] == [64, 1, 1]
    else:  # the binary form's fixed records: the products
        assert kernel["args"]["groups"] == 512 and kernel["args"]["group_size"] == 64
    assert kernel["args"]["argument_bytes"] == 8
    copies = spans_of(events, {"memcpy"})
    assert {c["args"]["bytes"] for c in copies} == {4 << 15} and {c["args"]["direction"] for c in copies} == {"HtoH"}
    fill, sync_fill = spans_of(events, {"fill"})
    assert fill["args"]["bytes"] == 4 << 15 and fill["args"]["pattern_bytes"] == 4
    assert tracks[(sync_fill["pid"], sync_fill["tid"])] == "synchronous (no queue)" and sync_fill["args"]["pattern_bytes"] == 2
    (host_fn,) = spans_of(events, {"host_function"})
    assert host_fn["name"] == "host function note"
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert processes[kernel["pid"]].startswith("device host:0")


def test_the_ordering_the_file_promises(job_trace: tuple[pathlib.Path, dict[str, Any]]) -> None:
    check_ordering(job_trace[1])


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
    check_ordering(json.loads(path.read_text()))


def test_offload_trace_summarises_the_file(job_trace: tuple[pathlib.Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    path, document = job_trace
    events = document["traceEvents"]
    summary = _trace.summarise(events)
    assert summary.api["olMemcpy"].count == 3 and summary.api["olMemAlloc"].failed == 1
    assert summary.kernels["foo"].count == 1
    (kernel,) = spans_of(events, {"kernel"})
    assert summary.kernels["foo"].total_us == pytest.approx(kernel["dur"])
    assert summary.copies["HtoH"].bytes == 3 * (4 << 15) and summary.copies["HtoH"].count == 3
    assert [q.track.split(" / ")[1] for q in summary.queues] == ["queue #1", "queue #2"]
    for q in summary.queues:
        assert q.idle_us >= 0 and q.busy_us > 0
    q2 = summary.queues[1]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = sorted((w["ts"], w["ts"] + w["dur"]) for w in spans_of(events, WORK) if tracks[(w["pid"], w["tid"])] == "queue #2")
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
    events = check_trace_event_format(run_job(run_python, tmp_path / "threads.json", THREADS_JOB))
    kernels = spans_of(events, {"kernel"})
    assert len(kernels) == 100
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for k in kernels:
        by_track[(k["pid"], k["tid"])].append(k)
    assert sorted(len(v) for v in by_track.values()) == [25, 25, 25, 25]
    for spans in by_track.values():
        for before, after in zip(spans, spans[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    launches = [c for c in spans_of(events, {"api"}) if c["name"] == "olLaunchKernel"]
    assert len({c["tid"] for c in launches}) == 4  # each thread's calls on its own track
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(finishes) == 100
    assert all(finishes[i]["ts"] >= starts[i]["ts"] for i in starts)


def test_the_main_job_timeline(run_python: Any, tmp_path: pathlib.Path) -> None:
    """`offload selfcheck` (what scripts/main.sh runs) traced: its copies, fills, kernel and events."""
    path = tmp_path / "main.json"
    code = "import sys\nfrom offload.cli import main\nsys.exit(main(['selfcheck', '--platform', 'host', '--size', '4096']))"
    events = check_trace_event_format(run_job(run_python, path, code))
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    work = [(tracks[(w["pid"], w["tid"])], w["cat"], w["name"]) for w in spans_of(events, WORK)]
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
    (kernel,) = spans_of(events, {"kernel"})
    assert kernel["args"]["num_groups"][0] * kernel["args"]["group_size"][0] >= 4096
    summary = _trace.summarise(events)
    assert summary.copies["HtoH"].bytes == 3 * 4 * 4096 and summary.kernels["saxpy"].count == 1
