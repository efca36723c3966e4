"""The timeline never raises into an API call, and ``OFFLOAD_TRACE`` has off values.

Each case runs in a fresh interpreter: the writer's failures must become one
``OffloadTraceWarning`` (never an exception out of ``olMemcpy`` or ``olShutDown``), leave no
``.tmp`` file, and lose no timeline where the file can be written.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Any

import pytest
from helpers import child_environ

ROOT = pathlib.Path(__file__).resolve().parents[1]

# A copy given an __offload_ptr__ object (what a Buffer is) and sizes that are __index__ integers
# of a type json cannot serialise (what numpy's integers are).
ODD_ARGUMENTS = r"""
import ctypes, warnings
import offload as ol

class Pointer:
    def __init__(self, address): self.__offload_ptr__ = address

class Size:  # like numpy.int64: an __index__ integer json.dump does not know
    def __init__(self, n): self.n = n
    def __index__(self): return self.n

warnings.simplefilter("error")  # any warning the calls raise fails the snippet
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = found[-1]
a = ol.olMemAlloc(host, ol.AllocType.DEVICE, 64)
ol.olMemFill(None, a, b"\x07", Size(64))
out = (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, Pointer(ctypes.addressof(out)), host, Pointer(a), host, Size(64))
assert bytes(out) == b"\x07" * 64, bytes(out)
q = ol.olCreateQueue(host)
ol.olMemFill(q, Pointer(a), b"\x09", Size(32))
ol.olMemcpy(q, ctypes.addressof(out), host, a, host, Size(64))
ol.olSyncQueue(q)
assert bytes(out) == b"\x09" * 32 + b"\x07" * 32, bytes(out)
ol.olDestroyQueue(q)
ol.olMemFree(a)
ol.olShutDown()
"""


def test_pointer_objects_and_index_sizes_are_recorded(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "odd.json"
    proc = run_python(ODD_ARGUMENTS, env={"OFFLOAD_TRACE": f"perfetto:{path}"})
    assert f"timeline written to {path}" in proc.stderr
    assert not list(tmp_path.glob("*.tmp"))
    events = json.loads(path.read_text())["traceEvents"]
    copies = [e for e in events if e.get("cat") == "memcpy"]
    fills = [e for e in events if e.get("cat") == "fill"]
    assert [c["args"]["bytes"] for c in copies] == [64, 64]
    assert [f["args"]["bytes"] for f in fills] == [64, 32]
    assert all(c["args"]["src"].startswith("0x") and c["args"]["dst"].startswith("0x") for c in copies)


SHUTDOWN = r"""
import warnings
import offload as ol
from offload._trace.timeline import OffloadTraceWarning
ol.olInit()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ol.olShutDown()  # must not raise
mine = [w for w in caught if issubclass(w.category, OffloadTraceWarning)]
assert len(mine) == 1, [str(w.message) for w in caught]
print(mine[0].message)
"""


@pytest.mark.parametrize("where", ["a directory", "under a file"])
def test_an_unwritable_path_is_one_warning_and_no_tmp_file(run_python: Any, tmp_path: pathlib.Path, where: str) -> None:
    if where == "a directory":
        target = tmp_path / "adir"
        target.mkdir()
        left = target.parent
    else:
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "trace.json"
        left = tmp_path
    proc = run_python(SHUTDOWN, env={"OFFLOAD_TRACE": f"perfetto:{target}"})
    assert "could not be written" in proc.stdout and str(target) in proc.stdout
    assert "Traceback" not in proc.stderr
    assert not list(left.glob("*.tmp")), list(left.iterdir())


def test_a_failure_at_exit_is_a_warning_too(run_python: Any, tmp_path: pathlib.Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    proc = run_python("import offload as ol\nol.olInit()\n", env={"OFFLOAD_TRACE": f"perfetto:{target}"})
    assert "OffloadTraceWarning" in proc.stderr and "could not be written" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.glob("*.tmp"))


def test_a_recording_failure_does_not_change_the_call(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Whatever fails inside the recorder (here: a broken work description), the call's result stands."""
    path = tmp_path / "broken.json"
    code = r"""
import warnings
import offload as ol
from offload._trace import timeline as _timeline
from offload._trace.timeline import OffloadTraceWarning
original = _timeline.Timeline._work_of
def broken(self, api, *args):
    if api == "olMemFill":
        raise RuntimeError("recorder bug")
    return original(self, api, *args)
_timeline.Timeline._work_of = broken
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    a = ol.olMemAlloc(found[-1], ol.AllocType.DEVICE, 64)
    ol.olMemFill(None, a, b"\x01", 64)
    ol.olMemFill(None, a, b"\x02", 64)
    ol.olMemFree(a)
    ol.olShutDown()
mine = [w for w in caught if issubclass(w.category, OffloadTraceWarning)]
assert len(mine) == 1 and "recorder bug" in str(mine[0].message), [str(w.message) for w in caught]
"""
    proc = run_python(code, env={"OFFLOAD_TRACE": f"perfetto:{path}"})
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "api"]
    assert names[0] == "olInit" and names[-1] == "olShutDown", (names, proc.stderr)


@pytest.mark.parametrize("value", ["0", "", "off", "OFF", "false", "False", "no", " no "])
def test_off_values_turn_tracing_off(run_python: Any, tmp_path: pathlib.Path, value: str) -> None:
    code = f"import os, offload as ol\nos.chdir({str(tmp_path)!r})\nol.olInit()\nol.olShutDown()\n"
    proc = run_python(code, env={"OFFLOAD_TRACE": value})
    assert "--->" not in proc.stderr and "olInit" not in proc.stderr, proc.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["1", "yes", "on"])
def test_other_values_turn_tracing_on(run_python: Any, value: str) -> None:
    proc = run_python("import offload as ol\nol.olInit()\nol.olShutDown()\n", env={"OFFLOAD_TRACE": value})
    assert "---> olInit" in proc.stderr


def test_main_sh_writes_a_relative_timeline_where_it_was_run(tmp_path: pathlib.Path) -> None:
    """scripts/main.sh, in a copy of the checkout's layout whose install step is a no-op and whose
    .venv/bin/offload is this environment's: the timeline lands in the caller's directory."""
    offload = pathlib.Path(sys.executable).parent / "offload"
    if not offload.exists():
        pytest.skip(f"no offload console script beside {sys.executable}")
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "main.sh", checkout / "scripts" / "main.sh")
    (checkout / "scripts" / "venv.sh").write_text("#!/bin/sh\nexit 0\n")
    (checkout / "scripts" / "venv.sh").chmod(0o755)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "offload").symlink_to(offload)
    user = tmp_path / "user"
    user.mkdir()
    env = child_environ("OFFLOAD_")
    env["OFFLOAD_TRACE"] = "perfetto:job.json"
    proc = subprocess.run(
        ["bash", str(checkout / "scripts" / "main.sh"), "--platform", "host", "--size", "1024"],
        cwd=user, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (user / "job.json").exists(), (proc.stderr, list(checkout.rglob("*.json")))
    assert not list(checkout.rglob("*.json"))
