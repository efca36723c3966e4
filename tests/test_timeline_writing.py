"""When and where the timeline is written (``OFFLOAD_TRACE=perfetto``): only at the final
olShutDown or at exit, never after a failed olInit, into the working directory by default."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from timeline_checks import check_trace_event_format, run_job


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
    document = run_job(run_python, path, code)
    names = [e["name"] for e in check_trace_event_format(document) if e["ph"] == "X"]
    assert names == ["olInit", "olInit", "olShutDown", "olShutDown"]
    path = tmp_path / "atexit.json"
    document = run_job(run_python, path, "import offload as ol\nol.olInit()\n")  # never shut down
    assert [e["name"] for e in check_trace_event_format(document) if e["ph"] == "X"] == ["olInit"]


def test_bare_perfetto_writes_into_the_working_directory(run_python: Any, tmp_path: pathlib.Path) -> None:
    code = f"import os, offload as ol\nos.chdir({str(tmp_path)!r})\nol.olInit()\nol.olShutDown()\nprint(os.getpid())"
    proc = run_python(code, env={"OFFLOAD_TRACE": "perfetto"})
    path = tmp_path / f"offload-trace-{proc.stdout.strip()}.pftrace"  # the default: Perfetto's binary trace
    assert path.exists(), proc.stderr
    from offload._trace.perfetto_read import load

    check_trace_event_format(load(str(path)))


def test_a_failed_olinit_writes_no_file(run_python: Any, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "failed.json"
    code = "import offload as ol\ntry:\n    ol.olInit()\nexcept ol.OffloadError:\n    pass\nelse:\n    raise SystemExit('olInit should have failed')\n"
    proc = run_python(code, env={"OFFLOAD_TRACE": f"perfetto:{path}", "OFFLOAD_BACKENDS": "nosuch", "OFFLOAD_BACKENDS_STRICT": "1"})
    assert not path.exists() and "timeline written" not in proc.stderr


def test_the_setting_forms(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    import os

    from offload._trace.timeline_file import path_from_setting

    monkeypatch.chdir(tmp_path)
    default = str(tmp_path / f"offload-trace-{os.getpid()}.pftrace")
    assert path_from_setting("perfetto") == path_from_setting("perfetto:") == path_from_setting(" Perfetto ") == default
    assert path_from_setting("perfetto:/x/y.json") == "/x/y.json"
    assert path_from_setting("perfetto:rel.json") == str(tmp_path / "rel.json")
    assert path_from_setting("1") is None and path_from_setting("json") is None and path_from_setting("") is None
