"""The timeline's default file, Perfetto's binary trace (``OFFLOAD_TRACE=perfetto:PATH``, PATH
not ending in ``.json``): decoded with the published schema (the ``perfetto`` package's
``perfetto_trace_pb2``, compiled from perfetto_trace.proto), streamed in chunks (a crash keeps
what was written), and the C recorder's bytes equal to the Python one's."""

from __future__ import annotations

import os
import pathlib
import random
import tempfile
from collections import defaultdict
from typing import Any

import pytest

#: Child code: offload initialised, ``dev`` its host device, ``build_test_kernel`` imported.
HOST_DEVICE = r"""
from offload_host import build_test_kernel
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
dev = [d for d in found if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST][0]
"""

JOB = "import os, sys, offload as ol" + HOST_DEVICE + r"""
kernel = ol.olGetSymbol(ol.olCreateProgram(dev, build_test_kernel("noargs")), "noargs", ol.SymbolKind.KERNEL)
q, q2 = ol.olCreateQueue(dev), ol.olCreateQueue(dev)
size = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
buf = ol.olMemAlloc(dev, ol.AllocType.HOST, 4096)
for _ in range(int(sys.argv[1])):
    ol.olLaunchKernel(q, dev, kernel, None, size)
ol.olMemFill(q, buf, b"\x01\x02", 4096)
event = ol.olCreateEvent(q)
ol.olWaitEvents(q2, [event])
try:
    ol.olMemAlloc(dev, ol.AllocType.DEVICE, 0)
except ol.OffloadError:
    pass
ol.olSyncQueue(q); ol.olSyncQueue(q2)
if sys.argv[2] == "flush":
    print(ol.flush_trace())  # what is recorded so far, appended now
if sys.argv[2] in ("crash", "flush"):
    sys.stdout.flush()
    os._exit(0)  # no exit handlers: what the chunks (and the flush) wrote is all there is
ol.olShutDown()
"""


def _run(run_python: Any, path: pathlib.Path, launches: int, how: str = "shutdown") -> str:
    code = f"import sys\nsys.argv = ['job', {str(launches)!r}, {how!r}]\n" + JOB
    return str(run_python(code, env={"OFFLOAD_TRACE": f"perfetto:{path}", "OFFLOAD_BACKENDS": "host"}).stdout)


def _schema() -> Any:
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as error:
        pytest.skip(f"the published schema is not importable (pip install perfetto): {error}")
    return perfetto_trace_pb2


def test_the_file_decodes_with_the_published_schema(run_python: Any, tmp_path: pathlib.Path) -> None:
    schema = _schema()
    path = tmp_path / "t.pftrace"
    _run(run_python, path, 20)
    trace = schema.Trace()
    trace.ParseFromString(path.read_bytes())
    packets = list(trace.packet)
    first = packets[0]
    assert first.sequence_flags & 1 and first.trace_packet_defaults.timestamp_clock_id == 64
    clocks = {c.clock_id: c.timestamp for c in first.clock_snapshot.clocks}
    assert clocks[64] == 0 and {1, 3, 6} <= set(clocks)  # clock 64 (ns from the origin) against REALTIME, MONOTONIC, BOOTTIME
    seq = first.trusted_packet_sequence_id
    tracks: dict[int, Any] = {}
    names: dict[int, str] = {}
    cats: dict[int, str] = {}
    open_slices: dict[int, list[str]] = defaultdict(list)
    slices: list[Any] = []
    flows_out: set[int] = set()
    flows_in: list[int] = []
    for p in packets:
        assert p.trusted_packet_sequence_id == seq
        if p.HasField("track_descriptor"):
            tracks[p.track_descriptor.uuid] = p.track_descriptor
        for n in p.interned_data.event_names:
            names[n.iid] = n.name
        for c in p.interned_data.event_categories:
            cats[c.iid] = c.name
        if p.HasField("track_event"):
            e = p.track_event
            assert e.track_uuid in tracks  # every track is described before it is used
            if e.type == schema.TrackEvent.TYPE_SLICE_BEGIN:
                assert e.name_iid in names and all(c in cats for c in e.category_iids)
                open_slices[e.track_uuid].append(names[e.name_iid])
                slices.append((p.timestamp, names[e.name_iid], cats[e.category_iids[0]], e.track_uuid))
                flows_out.update(e.flow_ids)
                flows_in.extend(e.terminating_flow_ids)
            elif e.type == schema.TrackEvent.TYPE_SLICE_END:
                assert open_slices[e.track_uuid], "an end without a begin"
                open_slices[e.track_uuid].pop()
    assert not any(open_slices.values())
    assert set(flows_in) <= flows_out  # every flow that ends started somewhere
    slices = [s[1:] for s in sorted(slices, key=lambda s: s[0])]  # (the file is in chunk order; a viewer sorts by time)
    api = [name for name, cat, _ in slices if cat == "api"]
    assert api[0] == "olInit" and api[-1] == "olShutDown" and api.count("olLaunchKernel") == 20
    kernels = [track for name, cat, track in slices if cat == "kernel"]
    assert len(kernels) == 20 and len(set(kernels)) == 1
    queue = tracks[kernels[0]]
    assert queue.name == "queue #1" and tracks[queue.parent_uuid].name.startswith("device host:0")
    thread = tracks[next(track for name, cat, track in slices if cat == "api")]
    assert thread.thread.tid > 0 and tracks[thread.parent_uuid].process.process_name.startswith("offload API")
    assert {"fill", "event_record", "event_wait"} <= {cat for _, cat, _ in slices}


def test_chunks_are_written_as_the_run_goes(run_python: Any, tmp_path: pathlib.Path) -> None:
    """More slices than a chunk, then a process that ends without exit handlers: the chunks
    written while it ran are a readable timeline (only the last, unwritten one is lost)."""
    from offload._trace.perfetto_read import load
    from offload._trace.timeline_stream import CHUNK

    path = tmp_path / "crash.pftrace"
    _run(run_python, path, 3 * CHUNK, "crash")
    events = load(str(path))["traceEvents"]
    launches = [e for e in events if e.get("name") == "olLaunchKernel"]
    assert CHUNK // 2 <= len(launches) < 3 * CHUNK  # the chunks written, not the tail
    assert [e for e in events if e.get("cat") == "kernel"]


def test_flush_trace_appends_what_was_recorded(run_python: Any, tmp_path: pathlib.Path) -> None:
    """``flush_trace()`` returns the path and appends every call and finished work item so far."""
    from offload._trace.perfetto_read import load

    path = tmp_path / "flushed.pftrace"
    out = _run(run_python, path, 100, "flush")
    assert out.strip() == str(path)
    events = load(str(path))["traceEvents"]
    assert len([e for e in events if e.get("name") == "olLaunchKernel"]) == 100
    assert len([e for e in events if e.get("cat") == "kernel"]) == 100  # synchronised before: all drawn
    assert [e["name"] for e in events if e.get("cat") == "api"][-1] == "olSyncQueue"


def test_the_compiled_recorder_writes_the_python_recorders_bytes() -> None:
    from offload._trace import perfetto as _perfetto

    fastpath = pytest.importorskip("offload._compiled._fastpath", reason="offload-core was built without its C extension")
    rng = random.Random(31)
    fast, slow = fastpath.Recorder(4242, 1000), _perfetto.PyRecorder(4242, 1000)
    for _ in range(3000):
        args = [rng.choice([1, 1 << 20, 1 << 40]), rng.randint(0, 300), rng.randint(0, 9), rng.randint(0, 1 << 45), rng.randint(0, 1 << 45)]
        args += [rng.choice([0, 5, 1 << 41]), rng.choice([0, 7, 1 << 42])] + [rng.randint(0, 1 << 50) for _ in range(rng.choice([0, 2, 4, 8]))]
        fast.slice(*args)
        slow.slice(*args)
    assert len(fast) == len(slow) == 3000
    for recorder in (fast, slow):  # work on two queue FIFOs (2500 each: over two 1024-entry blocks), completed out of order, some never
        queues = [recorder.queue(1 << 20), recorder.queue(2 << 20)]
        handles = [recorder.work(queues[i % 2], 5, 2, 1000 * i, 0, recorder.flow(), 0, 1, i) for i in range(5000)]
        for i in reversed(range(4900)):
            recorder.complete(handles[i], 1000 * i + (700 if i % 3 else 50))
        recorder.complete(handles[0], 1)  # (a second completion changes nothing)
        assert recorder.unfinished() == 5000
    assert fast.take() == slow.take()
    assert fast.unfinished() == slow.unfinished() == 100  # the tail never completed
    fd, name = tempfile.mkstemp()
    try:
        fast.slice(1, 2, 3, 4, 5)
        slow.slice(1, 2, 3, 4, 5)
        assert fast.write_to(fd) == len(slow.take()) > 0
    finally:
        os.close(fd)
        os.unlink(name)
    assert len(fast) == 0 and fast.take() == b""
    with pytest.raises(TypeError):
        fast.slice(1, 2, 3, 4, "5")
    with pytest.raises(TypeError):
        fast.slice(1, 2, 3)


def test_a_wait_ends_no_earlier_than_its_record_in_both_recorders() -> None:
    """Stamps of two queues disagree under load: a wait stamped before the record it waits for
    (another queue's) is drawn once the record is, ending no earlier; both recorders alike."""
    from offload._trace import perfetto as _perfetto

    fastpath = pytest.importorskip("offload._compiled._fastpath", reason="offload-core was built without its C extension")
    out = []
    for recorder in (fastpath.Recorder(7, 0), _perfetto.PyRecorder(7, 0)):
        q1, q2 = recorder.queue(1 << 20), recorder.queue(2 << 20)
        event = recorder.flow()
        wait = recorder.work(q1, 3, 7, 100, 0, recorder.flow(), event)  # (q1 drawn first: the wait's queue)
        after = recorder.work(q1, 4, 2, 150, 0, recorder.flow(), 0)
        record = recorder.work(q2, 2, 6, 90, event, recorder.flow(), 0)
        recorder.complete(wait, 500)  # stamped before the record's stamp
        recorder.complete(after, 520)
        first = recorder.take()  # the record is not complete: neither the wait nor what follows it is drawn
        recorder.complete(record, 800)
        out.append((first, recorder.take()))
    assert out[0] == out[1]
    first, second = out[0]
    assert first == b""
    slices = {}
    for packet in _perfetto_slices(second):
        slices[packet[0]] = packet[1:]
    assert slices[3][1] >= slices[2][1] == 800  # the wait (name 3) ends with its record (name 2)
    assert slices[4][0] >= slices[3][1]  # and the queue's next work after it


def _perfetto_slices(data: bytes) -> list[tuple[int, int, int]]:
    """(name iid, begin, end) of the slices of packets made by a recorder (no interning)."""
    from offload._trace.perfetto_read import fields, packets

    opened: dict[int, list[tuple[int, int]]] = {}
    out = []
    for body in packets(data):
        packet = dict(fields(body))  # TracePacket: timestamp (8), track_event (11)
        event = dict(fields(packet.get(11, b"")))  # TrackEvent: type (9), track_uuid (11), name_iid (10)
        kind, track, name, ts = event.get(9, 0), event.get(11, 0), event.get(10, 0), packet.get(8, 0)
        if kind == 1:
            opened.setdefault(track, []).append((name, ts))
        elif kind == 2:
            name, begin = opened[track].pop()
            out.append((name, begin, ts))
    return out


#: Child code after HOST_DEVICE: ``kernel`` (the test kernel foo), a queue ``q``, 64 words of host
#: memory ``out``, and the ``args`` and ``size`` of a launch of foo over them.
FOO_ON_A_QUEUE = r"""
kernel = ol.olGetSymbol(ol.olCreateProgram(dev, build_test_kernel("foo")), "foo", ol.SymbolKind.KERNEL)
q = ol.olCreateQueue(dev)
out = ol.olMemAlloc(dev, ol.AllocType.HOST, 4 * 64)
args, size = out.to_bytes(8, "little"), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1))
"""

COMPILED_JOB = "import json, offload as ol" + HOST_DEVICE + FOO_ON_A_QUEUE + r"""
for _ in range(50):
    ol.olLaunchKernel(q, dev, kernel, args, size)
ol.olMemFill(q, out, b"\x00\x00\x00\x00", 4 * 64)  # (a fill: the Python path, on the same queue)
for _ in range(50):
    ol.olLaunchKernel(q, dev, kernel, args, size)
ol.olSyncQueue(q)
counts = getattr(ol.olLaunchKernel, "counts", {})
ol.olShutDown()
print(json.dumps(counts))
"""


def test_compiled_launches_are_recorded_in_enqueue_order(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Under the timeline the compiled path makes and records launches itself (the queue's stamp
    times their work); the Python path's work on the same queue keeps its place among them."""
    import json

    from offload._trace.perfetto_read import load

    path = tmp_path / "compiled.pftrace"
    proc = run_python(COMPILED_JOB, env={"OFFLOAD_TRACE": f"perfetto:{path}", "OFFLOAD_BACKENDS": "host"})
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    if counts:  # the compiled path is on: it made (and recorded) all but the first launches
        assert counts["fast"] >= 90, counts
    events = load(str(path))["traceEvents"]
    calls = sorted((e for e in events if e.get("cat") == "api" and e["name"] in ("olLaunchKernel", "olMemFill")), key=lambda e: e["ts"])
    work = [e for e in events if e.get("cat") in ("kernel", "fill")]
    assert [e["cat"] for e in work] == ["kernel"] * 50 + ["fill"] + ["kernel"] * 50
    assert len(calls) == 101
    for call, span in zip(calls, work):  # each span after its call began, and after the one before it
        assert span["ts"] >= call["ts"] - 1e-3 and span["dur"] >= 0
    for before, after in zip(work, work[1:]):
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    starts = {e["id"] for e in events if e["ph"] == "s" and e["name"] == "enqueue"}
    finishes = {e["id"] for e in events if e["ph"] == "f" and e["name"] == "enqueue"}
    assert len(starts) == len(finishes) == 101 and starts == finishes  # an arrow from each call to its work


HELD_JOB = "import json, threading, offload as ol" + HOST_DEVICE + FOO_ON_A_QUEUE + r"""
for _ in range(20):
    ol.olLaunchKernel(q, dev, kernel, args, size)
ol.olSyncQueue(q)
threads = sorted(t.name for t in threading.enumerate())  # the timeline gave the queue no thread of its own
gate = threading.Event()
ol.olLaunchHostFunction(q, lambda _: gate.wait(), None)  # holds the queue: launches pile up past its bound
threading.Timer(0.3, gate.set).start()
for _ in range(1500):
    ol.olLaunchKernel(q, dev, kernel, args, size)
ol.olSyncQueue(q)
counts = getattr(ol.olLaunchKernel, "counts", {})
ol.olShutDown()
print(json.dumps({"counts": counts, "threads": threads}))
"""


def test_launches_past_a_full_queue_are_recorded_once(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Launches stamped by the queue (the compiled path's, and the Python path's alike) while the
    queue holds more than it takes: those it refused (the Python path then waits and makes them)
    are drawn once, in enqueue order, each with its flow; the timeline starts no queue thread."""
    import json

    from offload._trace.perfetto_read import load

    path = tmp_path / "held.pftrace"
    proc = run_python(HELD_JOB, env={"OFFLOAD_TRACE": f"perfetto:{path}", "OFFLOAD_BACKENDS": "host"})
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    counts = result["counts"]
    if counts:  # the compiled path is on: some launches deferred to the Python path at the bound
        assert counts["fast"] >= 1000 and counts["deferred"] >= 1, counts
        assert result["threads"] == ["MainThread"], result["threads"]
    events = load(str(path))["traceEvents"]
    work = [e for e in events if e.get("cat") in ("kernel", "host_function")]
    assert [e["cat"] for e in work] == ["kernel"] * 20 + ["host_function"] + ["kernel"] * 1500
    for before, after in zip(work, work[1:]):
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    assert work[21]["ts"] + 1e-3 >= work[20]["ts"] + work[20]["dur"]  # held until the gate opened
    starts = {e["id"] for e in events if e["ph"] == "s" and e["name"] == "enqueue"}
    finishes = {e["id"] for e in events if e["ph"] == "f" and e["name"] == "enqueue"}
    assert len(starts) == len(finishes) == 1521 and starts == finishes


def test_only_a_backend_with_a_stamp_entry_point_stamps_work() -> None:
    """The streamed timeline has queued work stamped by the queue only where the device's entry
    points have ``stamp`` (the host backend's); others (the GPU backends' entry points have none)
    keep their events and callbacks. A capsule of another name is refused."""
    import ctypes

    fastpath = pytest.importorskip("offload._compiled._fastpath", reason="offload-core was built without its C extension")
    from offload._trace import perfetto as _perfetto

    class EntryPoints(ctypes.Structure):
        _fields_ = [("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32)] + [(f"fn{i}", ctypes.c_void_p) for i in range(8)]

    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    none = EntryPoints(1, ctypes.sizeof(EntryPoints))  # every entry point NULL
    recorder = fastpath.Recorder(1, 0)
    handle = recorder.work(recorder.queue(1 << 20), 1, 2, 0)
    capsule = new_capsule(ctypes.addressof(none), b"offload.native_entry_points", None)
    assert recorder.stamps(capsule) is False and recorder.stamp(handle, capsule, 1, 1) is False
    with pytest.raises(ValueError):
        recorder.stamps(new_capsule(ctypes.addressof(none), b"something else", None))
    assert _perfetto.PyRecorder(1, 0).stamps(capsule) is False
    ol = pytest.importorskip("offload")
    ol.olInit()
    try:
        found: list[Any] = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        host = [d for d in found if d.entry_points is not None and d.platform.name == "host"]
        if not host:
            pytest.skip("no host device with native entry points")
        assert recorder.stamps(host[0].entry_points) is True
    finally:
        ol.olShutDown()


def test_settle_takes_the_completed_prefix_off_the_fifos() -> None:
    """``settle`` (the JSON timeline reads its stamped work's ends so): each queue's completed
    prefix, in enqueue order, as (handle, end) pairs, taken off without being drawn; both recorders."""
    from offload._trace import perfetto as _perfetto

    fastpath = pytest.importorskip("offload._compiled._fastpath", reason="offload-core was built without its C extension")
    for recorder in (fastpath.Recorder(3, 0), _perfetto.PyRecorder(3, 0)):
        q1, q2 = recorder.queue(1), recorder.queue(2)
        a, b, c = (recorder.work(q1, 0, 0, t) for t in (10, 20, 30))
        d = recorder.work(q2, 0, 0, 15)
        recorder.complete(a, 100)
        recorder.complete(c, 300)
        recorder.complete(d, 150)
        assert recorder.settle() == [(a, 100), (d, 150)]  # c waits behind b
        recorder.complete(b, 200)
        assert recorder.settle() == [(b, 200), (c, 300)]
        assert recorder.settle() == [] and recorder.unfinished() == 0 and recorder.take() == b""
