"""One timeline for a job: rank files carry a rank and a clock anchor; ``offload trace merge``
aligns them and gives each rank a process group; ``offload trace`` sums up per rank; malformed
inputs end with one line and exit status 2, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from offload._trace import job_timeline as _job_timeline
from offload.cli import main
from helpers import child_environ

WALL = 1_700_000_000_000_000_000


def _rank_file(rank: int | None, wall_ns: int, perf_ns: int, origin_ns: int, events: list[dict[str, Any]]) -> dict[str, Any]:
    other: dict[str, Any] = {"producer": "offload test", "clock_anchor": {"wall_ns": wall_ns, "perf_ns": perf_ns, "origin_ns": origin_ns, "error_ns": 40}}
    if rank is not None:
        other["rank"] = rank
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def _events(rank: int) -> list[dict[str, Any]]:
    return [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": f"rank {rank}: offload API (pid 4{rank})"}},
        {"name": "process_sort_index", "ph": "M", "pid": 1, "tid": 0, "args": {"sort_index": 0}},
        {"name": "process_name", "ph": "M", "pid": 100, "tid": 0, "args": {"name": f"rank {rank}: device host:0"}},
        {"name": "thread_name", "ph": "M", "pid": 100, "tid": 100_000_001, "args": {"name": "queue #1"}},
        {"name": "olLaunchKernel", "cat": "api", "ph": "X", "pid": 1, "tid": 77, "ts": 10.0, "dur": 2.0, "args": {"result": "OL_SUCCESS"}},
        {"name": "enqueue", "cat": "flow", "ph": "s", "id": 1, "pid": 1, "tid": 77, "ts": 10.001},
        {"name": "saxpy", "cat": "kernel", "ph": "X", "pid": 100, "tid": 100_000_001, "ts": 11.0, "dur": 5.0, "args": {}},
        {"name": "enqueue", "cat": "flow", "ph": "f", "bp": "e", "id": 1, "pid": 100, "tid": 100_000_001, "ts": 11.001},
        {"name": "memcpy DtoH", "cat": "memcpy", "ph": "X", "pid": 100, "tid": 100_000_001, "ts": 16.0, "dur": 1.0, "args": {"bytes": 4096, "direction": "DtoH"}},
    ]


def test_merge_aligns_clocks_and_groups_processes_per_rank() -> None:
    # rank 1's session started 1 ms of wall time after rank 0's, on a monotonic clock of its own
    zero = _rank_file(0, WALL, 5_000, 5_000, _events(0))
    one = _rank_file(1, WALL + 2_000_000, 900_000_000, 899_000_000, _events(1))
    merged = _job_timeline.merge([("r1.json", one), ("r0.json", zero)])
    events = merged["traceEvents"]
    launches = {e["pid"]: e["ts"] for e in events if e.get("name") == "olLaunchKernel"}
    assert launches == {1: 10.0, 1001: 1010.0}  # rank 1 shifted by exactly 1000 us
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {1: "rank 0: offload API (pid 40)", 100: "rank 0: device host:0", 1001: "rank 1: offload API (pid 41)", 1100: "rank 1: device host:0"}
    sort = {e["pid"]: e["args"]["sort_index"] for e in events if e.get("name") == "process_sort_index"}
    assert sort[1] < sort[100] < sort[1001] < sort[1100]  # each rank's processes together, rank by rank
    queues = {(e["pid"], e["tid"]) for e in events if e.get("cat") == "kernel"}
    assert queues == {(100, 100_000_001), (1100, 1_100_000_001)}  # queue tracks follow their device
    flows = [(e["id"], e["ph"], e["pid"]) for e in events if e.get("cat") == "flow"]
    assert len({f[0] for f in flows}) == 2 and all(sum(1 for g in flows if g[0] == f[0]) == 2 for f in flows)
    stamps = [e["ts"] for e in events if "ts" in e]
    assert stamps == sorted(stamps) and min(stamps) >= 0
    assert [m["rank"] for m in merged["otherData"]["merged"]] == [0, 1]
    assert merged["otherData"]["merged"][1]["shift_us"] == 1000.0
    json.dumps(merged, allow_nan=False)


def test_files_without_a_rank_are_numbered_after_the_named_ones() -> None:
    a = _rank_file(3, WALL, 0, 0, _events(3))
    b = _rank_file(None, WALL, 0, 0, [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "offload API (pid 9)"}}])
    merged = _job_timeline.merge([("a", a), ("b", b)])
    assert [m["rank"] for m in merged["otherData"]["merged"]] == [3, 4]
    assert "rank 4: offload API (pid 9)" in [e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"]


def _write(path: Path, document: Any) -> str:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def test_cli_merges_and_trace_sums_up_per_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [_write(tmp_path / f"rank{r}.json", _rank_file(r, WALL + r * 1000, 0, 0, _events(r))) for r in range(3)]
    out = tmp_path / "job.json"
    assert main(["trace", "merge", *files, "-o", str(out)]) == 0
    assert "3 rank(s)" in capsys.readouterr().out
    assert main(["trace", str(out)]) == 0
    text = capsys.readouterr().out
    section = text[text.index("per rank"):].splitlines()
    assert [line.split()[:2] for line in section[2:]] == [["rank", "0"], ["rank", "1"], ["rank", "2"]]
    assert all(line.split()[2] == "1" and line.split()[4] == "1" for line in section[2:])  # 1 call, 1 kernel each
    assert main(["trace", "--json", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ranks"]["rank 2"]["bytes"] == 4096 and summary["ranks"]["rank 1"]["kernels"] == 1
    assert main(["trace", files[0]]) == 0  # one rank's own file: one rank
    assert "rank 0" in capsys.readouterr().out


def test_single_process_file_has_no_rank_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [e for e in _events(0) if e.get("name") != "process_name"]
    assert main(["trace", _write(tmp_path / "t.json", {"traceEvents": events})]) == 0
    assert "per rank" not in capsys.readouterr().out


BAD = {
    "not json": "{oops",
    "a bare list": [],
    "no traceEvents list": {"traceEvents": {}},
    "no anchor": {"traceEvents": [], "otherData": {}},
    "anchor not ints": {"traceEvents": [], "otherData": {"clock_anchor": {"wall_ns": "1", "perf_ns": 0, "origin_ns": 0}}},
    "event not an object": _rank_file(0, WALL, 0, 0, [3]),
    "ts not a number": _rank_file(0, WALL, 0, 0, [{"ph": "X", "ts": "soon", "pid": 1, "tid": 1}]),
    "rank not an int": {"traceEvents": [], "otherData": {"rank": "zero", "clock_anchor": {"wall_ns": 1, "perf_ns": 0, "origin_ns": 0}}},
    "binary": "\udcff",
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_input_is_one_line_and_status_2(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    if case == "binary":
        bad.write_bytes(b"\xff\xfe\x00garbage")
    else:
        _write(bad, BAD[case])
    good = _write(tmp_path / "good.json", _rank_file(0 if case == "rank not an int" else 5, WALL, 0, 0, _events(5)))
    out = tmp_path / "job.json"
    assert main(["trace", "merge", good, str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("offload: trace merge: ") and str(bad) in err[0], err
    assert not out.exists()


def test_other_failures_are_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _write(tmp_path / "one.json", _rank_file(1, WALL, 0, 0, _events(1)))
    again = _write(tmp_path / "again.json", _rank_file(1, WALL, 0, 0, _events(1)))
    cases = {
        "missing": ["trace", "merge", str(tmp_path / "nope.json"), "-o", str(tmp_path / "o.json")],
        "same rank": ["trace", "merge", one, again, "-o", str(tmp_path / "o.json")],
        "unwritable": ["trace", "merge", one, "-o", str(tmp_path / "no-dir" / "o.json")],
    }
    for what, argv in cases.items():
        assert main(argv) == 2, what
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("offload: trace merge: "), (what, err)
    assert main(["trace", "merge", one, again, "-o", str(tmp_path / "o.json")]) == 2
    assert "rank 1 is also the rank of" in capsys.readouterr().err
    assert main(["trace", "merge", "-o", str(tmp_path / "o.json")]) == 2  # no files: argparse's usage error
    assert main(["trace", "merge", one]) == 2  # no -o
    assert not (tmp_path / "o.json").exists() and not list(tmp_path.glob("*.tmp"))


def test_no_traceback_from_the_command(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.json", "[1, 2")
    proc = subprocess.run(
        [sys.executable, "-m", "offload", "trace", "merge", bad, "-o", str(tmp_path / "o.json")],
        capture_output=True, text=True, timeout=120, env=child_environ("OFFLOAD_"),
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "not JSON" in proc.stderr, proc.stderr


_RANK_JOB = r"""
import numpy as np, offload
x = offload.to_device(np.arange(1024, dtype=np.float32), "host")
assert x.to_numpy()[5] == 5
"""


def test_real_rank_files_from_processes_under_a_launcher(tmp_path: Path, run_python: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Two processes that a PMI launcher would have started (ranks from PMI_RANK), no MPI needed."""
    for rank in (0, 1):
        run_python(_RANK_JOB, env={"PMI_RANK": str(rank), "OFFLOAD_TRACE": f"perfetto:{tmp_path}/rank{{rank}}.json"})
    files = sorted(str(p) for p in tmp_path.glob("rank*.json"))
    assert [Path(f).name for f in files] == ["rank0.json", "rank1.json"]
    for rank, path in enumerate(files):
        other = json.loads(Path(path).read_text())["otherData"]
        assert other["rank"] == rank and set(other["clock_anchor"]) == {"wall_ns", "perf_ns", "error_ns", "origin_ns"}
        assert 0 <= other["clock_anchor"]["error_ns"] < 10_000_000
    out = tmp_path / "job.json"
    assert main(["trace", "merge", *files, "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    names = [e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"]
    assert any(n.startswith("rank 0: offload API") for n in names) and any(n.startswith("rank 1: device host:0") for n in names)
    shift = merged["otherData"]["merged"][1]["shift_us"]
    assert shift > 0  # rank 1 ran after rank 0 finished: its events are placed after rank 0's
    first = min(e["ts"] for e in merged["traceEvents"] if e.get("pid", 0) >= 1000 and "ts" in e)
    last0 = max(e["ts"] + e.get("dur", 0) for e in merged["traceEvents"] if e.get("pid", 0) < 1000 and "ts" in e)
    assert first > last0


def test_a_closed_stdout_is_no_traceback(tmp_path: Path) -> None:
    one = _write(tmp_path / "one.json", _rank_file(1, WALL, 0, 0, _events(1)))
    out = tmp_path / "job.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "offload", "trace", "merge", one, "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_environ("OFFLOAD_"),
    )
    assert proc.stdout is not None
    proc.stdout.close()  # `... | head -0`: the reader is gone before the command prints
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert json.loads(out.read_text())["otherData"]["merged"][0]["rank"] == 1


def test_binary_rank_files_concatenate_into_one_timeline(tmp_path: Path, run_python: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The default form: two ranks' Perfetto files merge by concatenation; read back, each rank is a
    process group on the wall clock (rank 1 after rank 0), and one rank given twice is refused."""
    from offload._trace.perfetto_read import load

    for rank in (0, 1):
        run_python(_RANK_JOB, env={"PMI_RANK": str(rank), "OFFLOAD_TRACE": f"perfetto:{tmp_path}/rank{{rank}}.pftrace"})
    files = sorted(str(p) for p in tmp_path.glob("rank*.pftrace"))
    for rank, path in enumerate(files):
        other = load(path)["otherData"]
        assert other["rank"] == rank and set(other["clock_anchor"]) == {"wall_ns", "perf_ns", "error_ns", "origin_ns"}
    out = tmp_path / "job.pftrace"
    assert main(["trace", "merge", *files, "-o", str(out)]) == 0
    assert out.read_bytes() == b"".join(Path(f).read_bytes() for f in files)
    merged = load(str(out))
    names = [e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"]
    assert any(n.startswith("rank 0: offload API") for n in names) and any(n.startswith("rank 1: device host:0") for n in names)
    assert merged["otherData"]["merged"][1]["shift_us"] > 0
    first = min(e["ts"] for e in merged["traceEvents"] if e.get("pid", 0) >= 1000 and "ts" in e)
    last0 = max(e["ts"] + e.get("dur", 0) for e in merged["traceEvents"] if e.get("pid", 0) < 1000 and "ts" in e)
    assert first > last0
    capsys.readouterr()
    assert main(["trace", "merge", files[0], files[0], "-o", str(tmp_path / "twice.pftrace")]) == 2
    assert "rank 0 is also that of" in capsys.readouterr().err
    mixed = tmp_path / "mixed.json"  # a binary file and a JSON one: merged into JSON
    run_python(_RANK_JOB, env={"PMI_RANK": "2", "OFFLOAD_TRACE": f"perfetto:{tmp_path}/rank{{rank}}.json"})
    assert main(["trace", "merge", files[0], str(tmp_path / "rank2.json"), "-o", str(mixed)]) == 0
    assert [m["rank"] for m in json.loads(mixed.read_text())["otherData"]["merged"]] == [0, 2]
