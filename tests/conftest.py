"""Fixtures of the project's own tests (the conformance kit brings its own through pytest11)."""

from __future__ import annotations

import collections.abc
import os
import sys

import pytest

import offload as ol
from offload._core.session import STATE

from helpers import devices

collect_ignore = [] if os.environ.get("OFFLOAD_CORE_ONLY") else ["core_only"]


@pytest.fixture
def session() -> collections.abc.Iterator[None]:
    """An olInit..olShutDown session of this test alone (the library must be idle around it)."""
    assert STATE.ctx is None, "a previous test left the library initialised"
    ol.olInit()
    try:
        yield
    finally:
        while STATE.ctx is not None:
            ol.olShutDown()


@pytest.fixture
def host(session: None) -> ol.Device:
    for device in devices():
        if device.platform.kind is ol.PlatformBackend.HOST:
            return device
    pytest.fail("the host backend is not installed")


@pytest.fixture
def run_python():
    """Run a Python snippet in a fresh interpreter; returns the CompletedProcess."""
    import subprocess

    def run(code: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        # (OFFLOAD_COMPILED passes: the suite's run with OFFLOAD_COMPILED=0 runs its children so too)
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_") or k == "OFFLOAD_COMPILED"}
        full_env.update(env or {})
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    return run


@pytest.fixture
def show(capsys: pytest.CaptureFixture[str]) -> collections.abc.Callable[[str], None]:
    """``show(line)``: print a line past output capture, so that CI logs carry it (the
    conformance kit runs' pass/skip counts on each platform)."""

    def write(line: str) -> None:
        with capsys.disabled():
            print(f"\n{line}", flush=True)

    return write
