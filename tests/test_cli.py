"""The ``offload`` command: in-process through ``main`` and as a real subprocess."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
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
from offload._core.session import STATE
from offload.cli import _selfcheck as selfcheck


@pytest.fixture(autouse=True)
def idle_library() -> Iterator[None]:
    """Every test starts and ends with the library uninitialised (main balances its olInit)."""
    assert STATE.ctx is None, "a previous test left the library initialised"
    yield
    assert STATE.ctx is None, "the test (or main) left the library initialised"


def _host_device_name() -> str:
    ol.olInit()
    try:
        found: list[ol.Device] = []
        ol.olIterateDevices(lambda device, _: found.append(device) or True)
        for device in found:
            platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
            if ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST:
                return str(ol.olGetDeviceInfo(device, ol.DeviceInfo.NAME))
    finally:
        ol.olShutDown()
    pytest.fail("the host backend is not installed")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _subprocess_env() -> dict[str, str]:
    return child_environ("OFFLOAD_")


class _Boom(RuntimeError):
    pass


def _broken_factory() -> Any:
    raise _Boom("driver library libbroken.so.1 not found")


class FakeBackend(MinimalBackend):
    """A loadable backend of one device that answers only NAME and has no saxpy binary."""

    @ol.hookimpl
    def init(self) -> list[str]:
        return ["fake-device"]

    @ol.hookimpl
    def get_device_info(self, device: Any) -> dict[ol.DeviceInfo, Any]:
        return {ol.DeviceInfo.NAME: "Fake Accelerator"}


@pytest.fixture
def fake_backend() -> Iterator[str]:
    with registered("fake", FakeBackend) as name:
        yield name


# --- offload devices ---------------------------------------------------------------------------


def test_devices_lists_the_host_device_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    name = _host_device_name()
    code, out, err = _run(capsys, "devices")
    assert code == 0, err
    assert re.search(r"^Platform \d+: host$", out, re.M), out  # the host platform is listed last
    assert f"Device 0: {name}" in out
    assert "BACKEND      HOST" in out
    # enum names without their C prefix, Dimensions as x,y,z
    assert "OL_DEVICE_TYPE" not in out
    lines = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines() if line.startswith("    ")}
    assert lines["TYPE"] == "HOST"
    assert lines["MAX_WORK_GROUP_SIZE_PER_DIMENSION"].count(",") == 2
    assert "ROUND_TO_NEAREST" in lines["SINGLE_FP_CONFIG"]
    assert set(lines) == {p.name for p in ol.DeviceInfo}


def test_devices_json_has_every_property(capsys: pytest.CaptureFixture[str]) -> None:
    name = _host_device_name()
    code, out, _ = _run(capsys, "devices", "--json")
    assert code == 0
    document = json.loads(out)
    (host,) = [p for p in document["platforms"] if p["BACKEND"] == "HOST"]
    assert set(host) >= {p.name for p in ol.PlatformInfo}
    info = host["devices"][0]["info"]
    assert set(info) == {p.name for p in ol.DeviceInfo}
    assert info["NAME"] == name
    assert info["TYPE"] == "HOST"
    assert set(info["MAX_WORK_SIZE_PER_DIMENSION"]) == {"x", "y", "z"}
    assert "ROUND_TO_NEAREST" in info["SINGLE_FP_CONFIG"]


def test_devices_shows_a_failing_property_as_an_error(capsys: pytest.CaptureFixture[str], fake_backend: str) -> None:
    code, out, _ = _run(capsys, "devices")
    assert code == 0
    assert "Device 0: Fake Accelerator" in out
    assert "<error: UNIMPLEMENTED>" in out  # VENDOR and the others the fake does not answer
    code, out, _ = _run(capsys, "devices", "--json")
    (fake,) = [p for p in json.loads(out)["platforms"] if p["NAME"] == "fake"]
    assert fake["devices"][0]["info"]["VENDOR"]["error"] == "UNIMPLEMENTED"


# --- offload backends --------------------------------------------------------------------------


def test_backends_shows_host_loaded(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "backends")
    assert code == 0
    (row,) = [line.split() for line in out.splitlines() if line.startswith("host ")]
    assert row[1] == "offload-host" and row[3] == "loaded" and int(row[4]) >= 1
    code, out, _ = _run(capsys, "backends", "--json")
    assert code == 0
    (host,) = [b for b in json.loads(out)["backends"] if b["name"] == "host"]
    assert host["loaded"] is True and host["distribution"] == "offload-host" and host["reason"] is None
    assert host["device_count"] >= 1


def test_backends_reports_a_broken_backend_as_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    ol.register_backend("broken", _broken_factory)
    try:
        code, out, _ = _run(capsys, "backends")
        assert code == 0  # a skip is information, not a failure
        (row,) = [line.split() for line in out.splitlines() if line.startswith("broken ")]
        assert row[1:] == ["(in-process)", "-", "skipped", "0"]
        assert "broken: skipped: driver library libbroken.so.1 not found" in out
        assert any(line.startswith("host ") and "loaded" in line for line in out.splitlines())

        code, out, _ = _run(capsys, "backends", "--json")
        assert code == 0
        (broken,) = [b for b in json.loads(out)["backends"] if b["name"] == "broken"]
        assert broken == {
            "name": "broken",
            "distribution": None,
            "version": None,
            "loaded": False,
            "reason": "driver library libbroken.so.1 not found",
            "device_count": 0,
            "note": None,
        }
    finally:
        ol.unregister_backend("broken")


# --- offload selfcheck -------------------------------------------------------------------------


def test_selfcheck_passes_on_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "selfcheck", "--platform", "host", "--size", "100003")  # not a multiple of the group size
    assert code == 0, out + err
    assert "verified: 100003 elements match" in out
    assert "GB/s" in out and "ms (events)" in out
    assert "1 passed, 0 failed, 0 skipped" in out


def test_selfcheck_json_of_one_platform(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "selfcheck", "--json", "--platform", "host", "--size", "4096")
    assert code == 0
    document = json.loads(out)
    assert (document["passed"], document["failed"], document["skipped"]) == (1, 0, 0)
    (result,) = document["devices"]
    assert result["platform"] == "host" and result["status"] == "passed" and result["mismatches"] == 0
    assert set(result["timings_ms"]) >= {"alloc", "copy_in", "kernel", "copy_out", "verify"}
    assert result["timings_ms"]["kernel"] >= 0
    assert set(result["throughput_gbps"]) == {"copy_in", "copy_out"}


def test_selfcheck_of_an_unknown_platform_fails_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "selfcheck", "--platform", "nosuch")
    assert code != 0
    assert out == ""
    assert "no device of platform 'nosuch'" in err and "host" in err


def test_selfcheck_skips_a_backend_without_a_saxpy_binary(
    capsys: pytest.CaptureFixture[str], fake_backend: str
) -> None:
    code, out, err = _run(capsys, "selfcheck", "--size", "1024")
    assert code == 0, out + err  # the host passed; the fake is skipped, not failed
    assert "fake:0  Fake Accelerator: skipped: no saxpy binary" in out
    assert re.search(r"\b[1-9]\d* passed, 0 failed, 1 skipped", out), out  # the host (and opencl, when installed)
    code, out, err = _run(capsys, "selfcheck", "--platform", "fake")
    assert code != 0  # nothing was checked
    assert "every one was skipped" in err


def test_selfcheck_reports_a_wrong_result(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli.saxpy_expected
    monkeypatch.setattr(selfcheck, "saxpy_expected", lambda a, x, y: real(a + 1.0, x, y))  # a wrong expectation
    code, out, _ = _run(capsys, "selfcheck", "--size", "256")
    assert code == 1
    assert "FAILED: " in out and "of 256 elements differ" in out


def test_main_shuts_down_when_a_command_raises(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode() -> list[ol.Device]:
        raise ol.OffloadError(ol.ErrorCode.BACKEND_FAILURE, "iteration exploded")

    monkeypatch.setattr(selfcheck, "_devices", explode)
    code, out, err = _run(capsys, "selfcheck")
    assert code == 1
    assert "OL_ERRC_BACKEND_FAILURE: iteration exploded" in err
    # the autouse fixture checks that the library is uninitialised again


def test_backends_tells_filtered_out_from_not_installed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OFFLOAD_BACKENDS", "nonexistent")
    code, out, _ = _run(capsys, "backends")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()}
    assert "filtered out by OFFLOAD_BACKENDS" in rows["host"] and rows["host"].split()[1] == "offload-host"
    assert "not installed" in rows["nonexistent"]
    assert "host: installed, but filtered out by OFFLOAD_BACKENDS" in out
    assert "nonexistent: named by OFFLOAD_BACKENDS, but not installed" in out
    assert "No backends discovered" not in out
    code, out, _ = _run(capsys, "backends", "--json")
    selection = json.loads(out)["selection"]
    installed = sorted(ep.name for ep in entry_points(group="offload.backends"))  # host, and any GPU backend
    assert selection == {
        "variable": "OFFLOAD_BACKENDS",
        "setting": "nonexistent",
        "filtered_out": installed,
        "not_installed": ["nonexistent"],
    }


def test_unknown_backend_names_warn_or_fail_under_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_BACKENDS", "host,nosuch")
    with pytest.warns(ol.OffloadBackendWarning, match="'nosuch', which no installed backend provides"):
        ol.olInit()
    try:
        assert [s.name for s in ol.backend_status()] == ["host"]  # the named one that exists still loads
    finally:
        ol.olShutDown()
    monkeypatch.setenv("OFFLOAD_BACKENDS_STRICT", "1")
    with pytest.raises(ol.OffloadError) as raised:
        ol.olInit()
    assert raised.value.code is ol.ErrorCode.NOT_FOUND and "nosuch" in raised.value.details
    assert STATE.ctx is None


def test_version_and_bare_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"offload {ol.__version__} (offload-core)"
    assert "backend host: offload-host " in out
    assert cli.main([]) == 0  # no command: the help, successfully
    out = capsys.readouterr().out
    assert out.startswith("usage: offload") and "selfcheck" in out and "trace" in out


def test_selfcheck_text_and_json_use_the_same_labels(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = _run(capsys, "selfcheck", "--platform", "host", "--size", "4096")
    assert code == 0
    code, out, _ = _run(capsys, "selfcheck", "--json", "--platform", "host", "--size", "4096")
    (result,) = json.loads(out)["devices"]
    labels = [line.split()[0] for line in text.splitlines() if line.startswith("  ")]
    assert labels == ["alloc", "program", "copy_in", "kernel", "copy_out", "verify"]
    assert set(labels) <= set(result["timings_ms"]) and "kernel_wall" in text
    assert set(result["timings_ms"]) == {*labels, "kernel_wall"}


def test_selfcheck_copies_exclude_first_touch(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Every device buffer is written once before the timed copies (its page faults are not copy time)."""
    order: list[str] = []
    real_fill, real_copy = ol.olMemFill, ol.olMemcpy
    monkeypatch.setattr(ol, "olMemFill", lambda *a: order.append("fill") or real_fill(*a))
    monkeypatch.setattr(ol, "olMemcpy", lambda *a: order.append("copy") or real_copy(*a))
    code, _, _ = _run(capsys, "selfcheck", "--platform", "host", "--size", "1024")
    assert code == 0
    assert order[:3] == ["fill", "fill", "copy"]


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["nosuchcommand"]) == 2
    assert cli.main(["selfcheck", "--size", "0"]) == 2
    assert "--size" in capsys.readouterr().err


# --- pure helpers ------------------------------------------------------------------------------


def test_format_value() -> None:
    flags = ol.DeviceFpCapabilityFlag.FMA | ol.DeviceFpCapabilityFlag.INF_NAN
    assert cli.format_value(flags) == "INF_NAN | FMA"
    assert cli.format_value(ol.DeviceFpCapabilityFlag(0)) == "0"
    assert cli.format_value(ol.DeviceType.GPU) == "GPU"
    assert cli.format_value(ol.Dimensions(1, 2, 3)) == "1,2,3"
    assert cli.format_value(True) == "true"
    assert cli.format_value(cli.PropertyError("UNIMPLEMENTED", "x")) == "<error: UNIMPLEMENTED>"
    assert cli.json_value(flags) == ["INF_NAN", "FMA"]
    assert cli.json_value(ol.Dimensions(1, 2, 3)) == {"x": 1, "y": 2, "z": 3}


# --- real processes ----------------------------------------------------------------------------


def test_python_dash_m_offload_selfcheck() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "offload", "selfcheck", "--size", "65536"],
        capture_output=True,
        text=True,
        env=_subprocess_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verified: 65536 elements match" in proc.stdout


def test_python_dash_m_offload_devices_json() -> None:
    name = _host_device_name()
    proc = subprocess.run(
        [sys.executable, "-m", "offload", "devices", "--json"],
        capture_output=True,
        text=True,
        env=_subprocess_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    infos = [d["info"] for p in json.loads(proc.stdout)["platforms"] for d in p["devices"]]
    assert name in [info["NAME"] for info in infos]


def test_console_script() -> None:
    script = pathlib.Path(sys.executable).parent / "offload"
    if not script.exists():
        pytest.skip(f"no console script at {script} (pip install -e ./core)")
    proc = subprocess.run(
        [str(script), "selfcheck", "--platform", "nosuch"], capture_output=True, text=True, env=_subprocess_env(), timeout=120
    )
    assert proc.returncode == 2
    assert "no device of platform 'nosuch'" in proc.stderr
