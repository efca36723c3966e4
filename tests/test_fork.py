"""A child made by ``os.fork()`` inside a session: it says clearly that the parent's devices are
not usable, and it always exits; the parent goes on as if nothing happened.

Each case runs in a fresh interpreter (the parent), which forks; the subprocess timeout is
the hang guard for a child that would never exit.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from helpers import HOST_CHILD_PRELUDE

FORK = r"""
import ctypes, os, struct, sys
""" + HOST_CHILD_PRELUDE + r"""
program, kernel = load_kernel("foo")
out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 64 * 4)
queue = ol.olCreateQueue(host)
size = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1))
ol.olLaunchKernel(queue, host, kernel, struct.pack("P", out), size)  # maybe still queued at the fork
pid = os.fork()
if pid == 0:
    results = []
    for call in (
        lambda: ol.olMemAlloc(host, ol.AllocType.DEVICE, 64),
        lambda: ol.olLaunchKernel(queue, host, kernel, struct.pack("P", out), size),
        lambda: ol.olSyncQueue(queue),
        lambda: ol.olInit(),
        lambda: ol.olShutDown(),
    ):
        try:
            call()
            results.append("no error")
        except ol.OffloadError as error:
            results.append(f"{error.code.name}: {error.details}")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(results))
    sys.exit(0)  # a normal exit: atexit handlers run
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
ol.olSyncQueue(queue)  # the parent is untouched
assert list((ctypes.c_uint32 * 64).from_address(out)) == list(range(64))
ol.olLaunchKernel(queue, host, kernel, struct.pack("P", out), size)
ol.olSyncQueue(queue)
ol.olDestroyQueue(queue); ol.olMemFree(out); ol.olDestroyProgram(program)
if os.environ.get("OFFLOAD_TRACE"):
    assert not os.path.exists(os.environ["OFFLOAD_TRACE"].partition(":")[2]), "the child wrote the parent's timeline"
ol.olShutDown()
print("parent done")
"""


def _child_results(run_python: Any, tmp_path: pathlib.Path, env: dict[str, str] | None = None) -> list[str]:
    report = tmp_path / "child.txt"
    script = tmp_path / "fork.py"
    script.write_text(FORK)
    proc = run_python(f"import sys, runpy\nsys.argv = ['fork.py', {str(report)!r}]\nrunpy.run_path({str(script)!r}, run_name='__main__')", env=env)
    assert "parent done" in proc.stdout, proc.stderr
    return report.read_text().splitlines()


def test_a_forked_child_is_told_and_exits(run_python: Any, tmp_path: pathlib.Path) -> None:
    results = _child_results(run_python, tmp_path)
    assert len(results) == 5, results
    for line in results:
        assert line.startswith("UNINITIALIZED: this process was forked"), results
        assert "not usable" in line and "spawn" in line


def test_a_forked_child_of_a_traced_session_writes_no_timeline(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "trace.json"
    results = _child_results(run_python, tmp_path, env={"OFFLOAD_TRACE": f"perfetto:{path}"})
    assert all(line.startswith("UNINITIALIZED") for line in results), results
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "api"]
    assert names.count("olLaunchKernel") == 2 and names[-1] == "olShutDown"


def test_a_child_forked_outside_a_session_can_init(run_python: Any) -> None:
    code = r"""
import os, sys
import offload as ol
ol.olInit(); ol.olShutDown()  # a session before the fork, closed
pid = os.fork()
if pid == 0:
    ol.olInit()
    found = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    ol.olMemFree(ol.olMemAlloc(found[-1], ol.AllocType.DEVICE, 64))
    ol.olShutDown()
    sys.exit(7)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 7, status
"""
    run_python(code)
