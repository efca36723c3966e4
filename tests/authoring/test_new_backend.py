"""``offload new-backend``: the generated package is complete, installs, is discovered, and passes
the conformance kit with zero failures and every skip naming its capability flag."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from offload.cli import main
from offload.cli._new_backend import FILES, write_package
from helpers import child_environ

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return child_environ(("OFFLOAD_", "PYTEST_", "PYTHON"))


def _run(args: list[str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_writes_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pkg"
    assert main(["new-backend", "my_dev", "--dir", str(target)]) == 0
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == sorted(t.format(package="offload_my_dev") for t in FILES.values())
    backend = (target / "src/offload_my_dev/_backend.py").read_text()
    assert "class MyDevBackend" in backend and "$" not in backend
    pyproject = (target / "pyproject.toml").read_text()
    assert 'my_dev = "offload_my_dev:MyDevBackend"' in pyproject
    assert 'my_dev = "offload_my_dev.conformance:MyDevCapabilities"' in pyproject
    for hook in ("create_event", "enqueue_host_call", "mem_register", "launch_kernel", "kernel_params", "max_group_size"):
        assert f"``{hook}``" in backend.split('"""')[1], f"the docstring does not list the left-out hook {hook}"
    assert "pkg" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["host", "cuda", "My-Dev", "1dev", ""])
def test_refuses_bad_names(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-backend", name, "--dir", str(tmp_path / "x")]) == 2
    assert "offload new-backend:" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_refuses_a_non_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["new-backend", "mydev", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_python_m_offload_cli(tmp_path: Path) -> None:
    _run([sys.executable, "-m", "offload.cli", "new-backend", "mydev"], cwd=tmp_path)
    assert (tmp_path / "offload-mydev" / "pyproject.toml").is_file()


@pytest.mark.parametrize("flags", [[], ["--async"]], ids=["sync", "async"])
def test_generated_package_installs_and_passes_the_kit(tmp_path: Path, flags: list[str]) -> None:
    """A fresh venv: offload-core, offload-host and offload-testing from this checkout, then the
    generated package (``--async``: the asynchronous device's, whose events and host functions the
    kit then tests too)."""
    env_dir = tmp_path / "venv"
    try:
        venv.EnvBuilder(with_pip=True).create(env_dir)
    except Exception as exc:  # e.g. no ensurepip on this Python
        pytest.skip(f"cannot create a virtual environment with pip here: {exc}")
    python, offload = env_dir / "bin" / "python", env_dir / "bin" / "offload"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-build-isolation"]
    _run([*pip, "setuptools>=64", "wheel", "pytest>=8"])
    _run([*pip, str(ROOT / "core"), str(ROOT / "backends" / "host"), str(ROOT / "testing")])  # testing: the kit
    _run([str(offload), "new-backend", *flags, "mydev", "--dir", str(tmp_path / "offload-mydev")])
    _run([*pip, "--no-deps", str(tmp_path / "offload-mydev")])

    listed = json.loads(_run([str(offload), "backends", "--json"]).stdout)["backends"]
    mydev = next(b for b in listed if b["name"] == "mydev")
    assert (mydev["distribution"], mydev["loaded"], mydev["device_count"]) == ("offload-mydev", True, 1), mydev

    kit = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider"],
        cwd=tmp_path / "offload-mydev", env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    summary = kit.stdout.strip().splitlines()[-1]
    print(f"generated backend, kit: {summary}")
    assert kit.returncode == 0, kit.stdout[-5000:] + kit.stderr[-2000:]
    assert "failed" not in summary and "error" not in summary, summary
    assert int(re.search(r"(\d+) passed", summary).group(1)) > 150, summary
    reasons = re.findall(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", kit.stdout)
    assert reasons and all("capabilities." in r for r in reasons), [r for r in reasons if "capabilities." not in r]
    if flags:  # the asynchronous device's queues, events and host functions are tested, not skipped
        for flag in ("events", "host_functions", "events_elapsed_time", "queued_fill"):
            assert not any(f"capabilities.{flag} is False" in r for r in reasons), (flag, reasons)


def test_async_template_writes_an_asynchronous_backend(tmp_path: Path) -> None:
    assert main(["new-backend", "--async", "my_dev", "--dir", str(tmp_path / "pkg")]) == 0
    backend = (tmp_path / "pkg/src/offload_my_dev/_backend.py").read_text()
    for hook in ("create_event", "sync_event", "enqueue_host_call", "event_elapsed_time"):
        assert f"def {hook}(" in backend, hook
    assert "HostFunctions" in backend and "$" not in backend
    compile(backend, "_backend.py", "exec")


def test_write_package_in_process(tmp_path: Path) -> None:
    written = write_package("abc", tmp_path / "abc")
    assert len(written) == len(FILES) and all(p.is_file() for p in written)
