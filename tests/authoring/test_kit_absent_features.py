"""The conformance kit against backends that leave optional hook groups out (issue 11).

Each run is a separate pytest process (``pytester``) holding the two files an author writes; the
backends are in ``kit_backends.py``. Zero failures, and every skip names the capability flag
that caused it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

BACKENDS = Path(__file__).with_name("kit_backends.py")

CONFTEST = """
import offload
from offload.testing import register_capabilities
from kit_backends import {backend}, {capabilities}

offload.register_backend("{name}", {backend})
register_capabilities("{name}", {capabilities})
"""


def run_kit(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str, backend: str, capabilities: str):
    monkeypatch.setenv("OFFLOAD_TEST_PLATFORM", name)
    pytester.makepyfile(kit_backends=BACKENDS.read_text())
    pytester.makeconftest(CONFTEST.format(name=name, backend=backend, capabilities=capabilities))
    pytester.makepyfile(test_conformance="from offload_testing.suite import *  # noqa: F401,F403\n")
    return pytester.runpytest_subprocess("-q", "-rfEs", "-p", "no:cacheprovider")


def skip_reasons(result: pytest.RunResult) -> list[str]:
    return [m.group(1) for line in result.outlines if (m := re.match(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", line))]


def test_memory_only_backend_passes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_kit(pytester, monkeypatch, "memonly", "MemoryOnlyBackend", "MemoryOnlyCapabilities")
    outcomes = result.parseoutcomes()
    print(f"memory-only backend: {outcomes}")
    assert result.ret == 0, "\n".join(result.outlines[-40:])
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0
    assert outcomes["passed"] > 150, outcomes
    reasons = skip_reasons(result)
    assert reasons and all("capabilities." in reason for reason in reasons), [
        r for r in reasons if "capabilities." not in r
    ]
    text = "\n".join(reasons)
    assert "capabilities.events is False (the backend does not implement create_event" in text
    assert "capabilities.kernel_launch is False (capabilities.programs is False)" in text
    assert "capabilities.managed_memory is False (declared False by MemoryOnlyCapabilities)" in text


def test_bare_backend_answers_unsupported_for_everything(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_kit(pytester, monkeypatch, "bare", "BareBackend", "BareCapabilities")
    outcomes = result.parseoutcomes()
    assert result.ret == 0, "\n".join(result.outlines[-40:])
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0
    passed = "\n".join(pytester.runpytest_subprocess("-q", "-rA", "-p", "no:cacheprovider").outlines)
    for absent in ("test_memory", "test_copies", "test_device_to_device", "test_mem_register", "test_queues"):
        assert re.search(rf"PASSED test_conformance.py::TestAbsentFeatures::{absent}\[bare_0\]", passed), absent
    assert all("capabilities." in reason for reason in skip_reasons(result))


def test_misdeclared_capabilities_fail(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kit's absence checks can fail: a declared feature without hooks, a denied one that works."""
    result = run_kit(pytester, monkeypatch, "memonly", "MemoryOnlyBackend", "MisdeclaredCapabilities")
    failed = {line.split(" - ")[0] for line in result.outlines if line.startswith("FAILED ")}
    assert "FAILED test_conformance.py::TestCapabilities::test_declarations_match_hooks[memonly_0]" in failed
    assert "FAILED test_conformance.py::TestAbsentFeatures::test_copies[memonly_0]" in failed
    assert any("TestEvent" in line for line in failed), failed  # events = True insists on events
