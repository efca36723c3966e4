"""The conformance kit checks every result through the API (issue 34).

A backend whose memory the host cannot touch (no MANAGED, no HOST allocations) runs the whole kit:
each case that checks a result reads it back with ``olMemcpy``, so the only cases skipped are the
ones that test host access to MANAGED or HOST memory, and their skip reasons say so. A planted
``sync_event`` defect (the errors before the event dropped) fails a kit case, and so does a
teardown that waits out a timeout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

BACKENDS = Path(__file__).with_name("device_only_backends.py")

CONFTEST = """
import offload
from offload.testing import register_capabilities
from device_only_backends import {backend}, {capabilities}

offload.register_backend("{name}", {backend})
register_capabilities("{name}", {capabilities})
"""

#: Skips the host backend itself has (no occupancy hook, one device; TestAbsentFeatures for present ones).
_HOST_SKIPS = ("capabilities.occupancy is False", "needs a second device", "the feature is tested, not its absence")


def run_kit(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str, backend: str, *args: str):
    monkeypatch.setenv("OFFLOAD_TEST_PLATFORM", name)
    pytester.makepyfile(device_only_backends=BACKENDS.read_text())
    pytester.makeconftest(CONFTEST.format(name=name, backend=backend, capabilities=backend.replace("Backend", "Capabilities")))
    pytester.makepyfile(test_conformance="from offload_testing.suite import *  # noqa: F401,F403\n")
    return pytester.runpytest_subprocess("-q", "-rfEs", "-p", "no:cacheprovider", *args)


def skip_reasons(result: pytest.RunResult) -> list[str]:
    return [m.group(1) for line in result.outlines if (m := re.match(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", line))]


def test_kit_without_host_visible_memory_skips_no_result_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_kit(pytester, monkeypatch, "devonly", "DeviceOnlyBackend")
    outcomes = result.parseoutcomes()
    print(f"device-only backend: {outcomes}")
    assert result.ret == 0, "\n".join(result.outlines[-40:])
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0
    assert outcomes["passed"] > 300, outcomes
    reasons = [r for r in skip_reasons(result) if not any(known in r for known in _HOST_SKIPS)]
    assert reasons, "the MANAGED and HOST cases must skip on a backend without them"
    for reason in reasons:
        assert re.search(r"capabilities\.(managed|host)_memory is False \(declared False by DeviceOnlyCapabilities\)", reason), reason
        assert "the case " in reason or "MANAGED" in reason or "HOST" in reason, f"the skip does not say what the case needs: {reason}"


def test_kit_catches_sync_event_dropping_queue_errors(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_kit(pytester, monkeypatch, "dropped", "EventErrorsDroppedBackend", "-k", "TestEvent")
    failed = [line for line in result.outlines if line.startswith("FAILED ")]
    assert any("TestEvent::test_sync_raises_earlier_errors[dropped_0]" in line for line in failed), (
        "\n".join(result.outlines[-30:])
    )


def test_kit_catches_a_slow_teardown(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_kit(pytester, monkeypatch, "slow", "SlowTeardownBackend", "-k", "TestTeardown")
    failed = [line for line in result.outlines if line.startswith("FAILED ")]
    assert any("TestTeardown::test_final_shutdown_is_prompt[slow_0]" in line for line in failed), (
        "\n".join(result.outlines[-30:])
    )
