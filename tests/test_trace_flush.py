"""A timeline survives every way a process ends: ``offload.flush_trace()`` writes what is
recorded so far (before ``os._exit``, at the end of a multiprocessing task), repeatedly and from
any thread, and the ``olShutDown`` that closes the user's ``olInit`` window writes the file even
while the object layer holds references of its own. Each case runs in a child process (it ends
the process, or it could crash it)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from helpers import child_environ

from offload.cli import main

PRELUDE = r"""
import json, os, sys, threading
import numpy as np
import offload
from offload._core.session import STATE
path = sys.argv[1] if len(sys.argv) > 1 else os.environ["TRACE_FILE"]
def api_calls():
    with open(path) as f:
        return [e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "api"]
"""


def _trace(run_python: Any, code: str, path: pathlib.Path, **env: str) -> Any:
    return run_python(PRELUDE + code, env={"OFFLOAD_TRACE": f"perfetto:{path}", "TRACE_FILE": str(path), **env})


def _api(path: pathlib.Path) -> list[str]:
    return [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "api"]


def _summary_reads(path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["trace", str(path)]) == 0
    return capsys.readouterr().out


EXIT_AFTER = r"""
x = offload.to_device(np.arange(4096, dtype=np.float32), "host")
with x.device.queue() as queue:
    x.buffer.fill(b"\0\0\x80\x3f", queue=queue)
assert x.to_numpy()[7] == 1.0
FLUSH
os._exit(0)  # no exit handler runs: only what was flushed is on disk
"""


def test_os_exit_after_flush_trace_leaves_a_valid_file(run_python: Any, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    flushed = tmp_path / "flushed.json"
    proc = _trace(run_python, EXIT_AFTER.replace("FLUSH", "assert offload.flush_trace() == path, offload.flush_trace()"), flushed)
    assert f"timeline written to {flushed}" in proc.stderr
    document = json.loads(flushed.read_text())
    calls = [e["name"] for e in document["traceEvents"] if e.get("cat") == "api"]
    assert {"olInit", "olMemAlloc", "olCreateQueue", "olMemFill", "olSyncQueue", "olMemcpy"} <= set(calls), calls
    work = {e["cat"] for e in document["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "api"}
    assert {"fill", "memcpy"} <= work, work
    assert "clock_anchor" in document["otherData"]  # what `offload trace merge` needs
    assert "olMemcpy" in _summary_reads(flushed, capsys)
    assert not list(tmp_path.glob("*.tmp"))
    # the same process without the flush leaves nothing: the file above is flush_trace's
    lost = tmp_path / "lost.json"
    _trace(run_python, EXIT_AFTER.replace("FLUSH", ""), lost)
    assert not lost.exists()


REPEATED = r"""
x = offload.to_device(np.arange(1024, dtype=np.float32), "host")
assert offload.flush_trace() == path
first = api_calls()
y = x.to_numpy()
assert offload.flush_trace() == path
second = api_calls()
assert len(second) > len(first) and second[:len(first)] == first, (first, second)
def copy():
    for _ in range(300):
        x.to_numpy()
def flush():
    for _ in range(15):
        assert offload.flush_trace() == path
        api_calls()  # whatever thread writes, the file on disk is always one whole document
threads = [threading.Thread(target=copy), threading.Thread(target=flush), threading.Thread(target=flush)]
for t in threads: t.start()
for t in threads: t.join()
third = api_calls()
assert len(third) > len(second) and third[:len(second)] == second
print(json.dumps([len(first), len(second), len(third)]))
"""


def test_repeated_flushes_rewrite_the_file_with_more(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.json"
    proc = _trace(run_python, REPEATED, path)
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.stderr.count("timeline written to") == 1, proc.stderr  # said once, not per flush
    final = _api(path)  # written again at exit: everything, the layer's olShutDown last
    assert len(final) > counts[-1] and final[-1] == "olShutDown"
    assert not list(tmp_path.glob("*.tmp"))


NOTHING_TO_WRITE = r"""
assert offload.flush_trace() is None  # no session open yet
offload.olInit()
print(offload.flush_trace())
offload.olShutDown()
assert offload.flush_trace() is None  # the session is over (and its file written)
"""


@pytest.mark.parametrize("setting", ["", "1", "json"])
def test_flush_trace_without_a_timeline_writes_nothing(run_python: Any, tmp_path: pathlib.Path, setting: str) -> None:
    proc = run_python(PRELUDE.replace('os.environ["TRACE_FILE"]', '""') + NOTHING_TO_WRITE, env={"OFFLOAD_TRACE": setting})
    assert proc.stdout.strip() == "None"
    assert "timeline written" not in proc.stderr


IN_HOST_FUNCTION = r"""
seen = []
x = offload.to_device(np.arange(64, dtype=np.float32), "host")
with x.device.queue() as queue:
    queue.host_function(lambda: seen.append(offload.flush_trace()))
assert seen == [path], seen
os._exit(0)
"""


def test_flush_trace_inside_a_host_function(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.json"
    _trace(run_python, IN_HOST_FUNCTION, path)
    assert "olCreateQueue" in _api(path)  # (olLaunchHostFunction may still be returning when it runs)


WINDOW = r"""
offload.olInit()
NESTED
x = offload.to_device(np.arange(1024, dtype=np.float32), "host")  # the object layer's own olInit
view = np.asarray(x)  # an export: one more reference of the layer's
assert STATE.refcount == EXPECTED, STATE.refcount
UNNEST
assert not os.path.exists(path)
offload.olShutDown()  # the user's last: the session goes on (the layer holds it)
assert STATE.ctx is not None and os.path.exists(path)
calls = api_calls()
assert calls[-1] == "olShutDown" and "olMemcpy" in calls, calls
print(json.dumps(calls))
os._exit(0)
"""


@pytest.mark.parametrize("nested", [False, True])
def test_the_users_last_olshutdown_writes_the_file_while_the_layer_holds_references(
    run_python: Any, tmp_path: pathlib.Path, nested: bool
) -> None:
    path = tmp_path / "t.json"
    code = WINDOW.replace("EXPECTED", "4" if nested else "3")
    code = code.replace("UNNEST", "offload.olShutDown()" if nested else "").replace("NESTED", "offload.olInit()" if nested else "")
    proc = _trace(run_python, code, path)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == _api(path)


MULTIPROCESSING = r"""
import multiprocessing

def task(i):
    x = offload.to_device(np.full(256, i, dtype=np.float32), "host")
    total = float(x.to_numpy().sum())
    offload.flush_trace()  # the pool ends its workers with SIGTERM: no exit handler runs
    return os.getpid(), total

if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(2) as pool:  # the with block terminates the workers
        print(json.dumps(pool.map(task, [1, 2])))
"""


def test_multiprocessing_workers_flush_at_the_end_of_their_task(run_python: Any, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "pool.py"
    script.write_text(PRELUDE.replace('os.environ["TRACE_FILE"]', '""') + MULTIPROCESSING)
    env = {**child_environ("OFFLOAD_"), "OFFLOAD_TRACE": f"perfetto:{tmp_path}/w-{{pid}}.json"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(total for _, total in results) == [256.0, 512.0]
    for pid in {pid for pid, _ in results}:
        path = tmp_path / f"w-{pid}.json"
        assert path.exists(), (sorted(p.name for p in tmp_path.iterdir()), proc.stderr)
        assert "olMemcpy" in _api(path)
    files = sorted(str(p) for p in tmp_path.glob("w-*.json"))
    merged = tmp_path / "job.json"
    assert main(["trace", "merge", *files, "-o", str(merged)]) == 0
    capsys.readouterr()
    assert "per rank" in _summary_reads(merged, capsys)


PROCESS_CHILD = r"""
import multiprocessing

def child(i):
    x = offload.to_device(np.full(256, i, dtype=np.float32), "host")
    assert float(x.to_numpy().sum()) == 256.0 * i  # no flush_trace: the child's end writes the file

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    process = context.Process(target=child, args=(3,))
    process.start(); process.join()
    print(json.dumps({"pid": process.pid, "exitcode": process.exitcode}))
"""


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_a_multiprocessing_child_writes_its_file_when_its_target_returns(tmp_path: pathlib.Path, method: str) -> None:
    """A child started by fork or forkserver leaves through os._exit once its target returned: the
    timeline is written by multiprocessing's finalizers, without a flush_trace call."""
    script = tmp_path / "child.py"
    script.write_text(PRELUDE.replace('sys.argv[1] if len(sys.argv) > 1 else os.environ["TRACE_FILE"]', '""') + PROCESS_CHILD)
    env = {**child_environ("OFFLOAD_"), "OFFLOAD_TRACE": f"perfetto:{tmp_path}/c-{{pid}}.json"}
    proc = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["exitcode"] == 0, proc.stderr
    assert [p.name for p in tmp_path.glob("c-*.json")] == [f"c-{result['pid']}.json"], proc.stderr  # the parent opened no session
    assert "olMemcpy" in _api(tmp_path / f"c-{result['pid']}.json")
