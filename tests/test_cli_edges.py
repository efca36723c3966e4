"""Every ``offload`` command path ends with a message and a nonzero code, never a traceback.

Each case runs the real command in a child process (``python -m offload.cli``), so that a
traceback, a hang or a crash fails that case alone, and checks the exit code and stderr.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import offload as ol
from helpers import child_environ, MinimalBackend, registered
import pytest
from offload import cli
from offload.cli import _selfcheck


def _offload(*argv: str, cwd: pathlib.Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = child_environ("OFFLOAD_")
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "offload.cli", *argv], capture_output=True, text=True, cwd=cwd, env=full, timeout=120
    )


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode not in (0, 1) or "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


# --- new-backend -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["core", "core_", "host", "cuda", "testing"])
def test_new_backend_refuses_our_own_distribution_names(tmp_path: pathlib.Path, name: str) -> None:
    proc = _offload("new-backend", name, "--dir", str(tmp_path / "out"))
    _refused(proc, "reserved")
    assert not (tmp_path / "out").exists()


def test_new_backend_refuses_an_installed_backend_name(tmp_path: pathlib.Path) -> None:
    """A name an installed distribution offload-NAME already has would replace it at install."""
    from importlib.metadata import distributions

    ours = {(d.metadata["Name"] or "").lower().replace("_", "-") for d in distributions()}
    if "offload-cuda" not in ours:
        pytest.skip("offload-cuda is not installed here")
    proc = _offload("new-backend", "cuda", "--dir", str(tmp_path / "out"))
    _refused(proc)


def test_new_backend_refuses_an_over_long_name(tmp_path: pathlib.Path) -> None:
    proc = _offload("new-backend", "a" * 300, cwd=tmp_path)
    _refused(proc, "characters long")
    assert not list(tmp_path.iterdir())


def test_new_backend_under_a_file_is_a_message(tmp_path: pathlib.Path) -> None:
    (tmp_path / "afile").write_text("x")
    proc = _offload("new-backend", "mydev", "--dir", str(tmp_path / "afile" / "pkg"))
    _refused(proc, "is a file")
    assert (tmp_path / "afile").read_text() == "x"


def test_new_backend_that_fails_half_way_leaves_nothing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A write that fails after some files were written (a full disk) is a message, and the
    folder it created is removed."""
    real = pathlib.Path.write_text
    calls = []

    def flaky(self: pathlib.Path, *args: Any, **kwargs: Any) -> int:
        calls.append(self)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", flaky)
    target = tmp_path / "pkg"
    assert cli.main(["new-backend", "mydev", "--dir", str(target)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not target.exists()


# --- trace -------------------------------------------------------------------------------------


MALFORMED = {
    "deep nesting": "[" * 100000 + "]" * 100000,
    "non-numeric ts": json.dumps({"traceEvents": [{"ph": "X", "cat": "api", "name": "olInit", "ts": "soon", "dur": 1}]}),
    "null args": json.dumps({"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": None},
                                             {"ph": "X", "cat": "memcpy", "name": "m", "ts": 0, "dur": 1, "args": None}]}),
    "null ts": json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": None, "dur": None}]}),
    "list args": json.dumps({"traceEvents": [{"ph": "X", "cat": "api", "name": "olInit", "ts": 0, "dur": 1, "args": [1]}]}),
    "string bytes": json.dumps({"traceEvents": [{"ph": "X", "cat": "memcpy", "name": "m", "ts": 0, "dur": 1, "args": {"bytes": "many"}}]}),
    "list pid": json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1, "pid": [1], "tid": {}}]}),
    "infinite dur": '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": Infinity}]}',
    "not utf-8": b"\xff\xfe{".decode("latin-1"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_trace_of_a_malformed_file_is_a_message(tmp_path: pathlib.Path, case: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(MALFORMED[case].encode("latin-1"))
    proc = _offload("trace", str(path))
    if case in ("null args", "list pid"):  # nulls mean "none", odd ids are still ids: summed up
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        return
    _refused(proc, "cannot read trace")


def test_trace_of_a_directory_is_a_message(tmp_path: pathlib.Path) -> None:
    _refused(_offload("trace", str(tmp_path)), "cannot read trace")


# --- selfcheck ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [str(1 << 40), str(10**30)])
def test_selfcheck_refuses_a_huge_size(size: str) -> None:
    proc = _offload("selfcheck", "--platform", "host", "--size", size)
    _refused(proc, "too large")
    assert proc.returncode == 2


def test_the_size_limit_follows_ids_and_memory() -> None:
    limit = _selfcheck.max_size()
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 1 <= limit <= (1 << 32) - 1 and 24 * limit <= memory


class ZeroBackend(MinimalBackend):
    """A backend that loads and finds no device, and says why."""

    @ol.hookimpl
    def init(self) -> list[Any]:
        return []

    @ol.hookimpl
    def no_devices_reason(self) -> str:
        return "no zerodev driver library (libzero.so.1) was found"

    @ol.hookimpl
    def get_device_info(self, device: Any) -> dict[Any, Any]:
        return {}


@pytest.fixture
def zero_backend() -> Iterator[str]:
    with registered("zerodev", ZeroBackend) as name:
        yield name


def test_devices_shows_a_platform_with_zero_devices(capsys: pytest.CaptureFixture[str], zero_backend: str) -> None:
    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "Platform zerodev: 0 devices: no zerodev driver library (libzero.so.1) was found" in out
    assert cli.main(["devices", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"name": "zerodev", "reason": "no zerodev driver library (libzero.so.1) was found"} in document["platforms_without_devices"]


def test_selfcheck_of_a_platform_with_zero_devices_says_why(capsys: pytest.CaptureFixture[str], zero_backend: str) -> None:
    assert cli.main(["selfcheck", "--platform", "zerodev"]) == 2
    err = capsys.readouterr().err
    assert "no device of platform 'zerodev': its backend loaded with 0 devices: no zerodev driver library" in err


def test_selfcheck_of_a_skipped_backend_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> Any:
        raise RuntimeError("libbroken.so.1 not found")

    with registered("brokendev", broken):
        assert cli.main(["selfcheck", "--platform", "brokendev"]) == 2
    assert "its backend was skipped" in capsys.readouterr().err


def test_a_gpu_skip_names_the_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """selfcheck finds a GPU program through the backend's capabilities: the skip says where."""
    from offload.testing import Capabilities, register_capabilities

    class Caps(Capabilities):
        programs_env = "OFFLOAD_ZERODEV_PROGRAMS"
        programs_suffix = ".zbin"

    register_capabilities("zerodev", Caps())
    monkeypatch.delenv("OFFLOAD_ZERODEV_PROGRAMS", raising=False)
    reason = _selfcheck.no_binary_reason("zerodev", "saxpy")
    assert "OFFLOAD_ZERODEV_PROGRAMS is not set" in reason and "saxpy.zbin" in reason
    monkeypatch.setenv("OFFLOAD_ZERODEV_PROGRAMS", "/nonexistent")
    assert "OFFLOAD_ZERODEV_PROGRAMS=/nonexistent holds no saxpy.zbin" in _selfcheck.no_binary_reason("zerodev", "saxpy")


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (progress lines are written only to one)."""

    def isatty(self) -> bool:
        return True


def test_selfcheck_reports_each_device_as_it_finishes(host: ol.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each device's lines are printed when it is done, not when every device is (issue 32), and a
    terminal is told which device is being checked."""
    out, progress, seen = io.StringIO(), _Terminal(), []
    real = _selfcheck.check_device

    def check(device: ol.Device, index: int, host_device: ol.Device | None, n: int) -> _selfcheck.CheckResult:
        seen.append((out.getvalue(), progress.getvalue()))
        return real(device, index, host_device, n)

    monkeypatch.setattr(_selfcheck, "check_device", check)
    results = _selfcheck._check_all([host, host], host, 512, out, progress)
    assert [r.status for r in results] == ["passed", "passed"]
    first, second = seen
    assert first[0] == "offload selfcheck: saxpy on 512 floats per device\n"
    assert "verified: 512 elements match" in second[0] and "host:0" in second[0]  # the first device, already shown
    assert first[1].splitlines() == ["offload selfcheck: checking host:0 (1 of 2)..."]
    assert second[1].splitlines()[1].startswith("offload selfcheck: host:0 passed in ")
    assert progress.getvalue().splitlines()[2] == "offload selfcheck: checking host:1 (2 of 2)..."
    quiet = io.StringIO()
    _selfcheck._check_all([host], host, 64, None, quiet)  # --json: no text report; not a terminal: no progress
    assert quiet.getvalue() == ""
