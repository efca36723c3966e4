"""The kit's success cases check the results they exist for: run against host backends that
lie in one way each (arguments zeroed at launch; event times made up), the cases that depend on
it fail, by name. Each run is a separate pytest process (pytester) holding an author's two files."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import offload
from offload import hookimpl
from offload.testing import register_capabilities
from offload_host import HostBackend
from offload_host.conformance import HostCapabilities


class ZeroedArguments(HostBackend):
    '''Launches every kernel with its argument bytes zeroed (same length): a wrong packing.'''

    @hookimpl
    def launch_kernel(self, device, queue, kernel, args, launch):
        if args is not None and len(bytes(args)) >= 16:
            args = bytes(8) + bytes(args)[8:] if bytes(args)[8:16] != bytes(8) else args
        elif args is not None:
            args = bytes(len(bytes(args)))
        return super().launch_kernel(device, queue, kernel, args, launch)


class MadeUpTimes(HostBackend):
    '''Reports an elapsed time of one hour between any two events.'''

    @hookimpl
    def event_elapsed_time(self, device, start, end):
        super().event_elapsed_time(device, start, end)
        return 3600e3


offload.register_backend("liar", {backend})
register_capabilities("liar", HostCapabilities)
"""


def run_kit(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, backend: str, select: str) -> pytest.RunResult:
    monkeypatch.setenv("OFFLOAD_TEST_PLATFORM", "liar")
    monkeypatch.setenv("OFFLOAD_BACKENDS", "liar,host")  # the real host device: host memory for copies
    pytester.makeconftest(CONFTEST.format(backend=backend))
    pytester.makepyfile(test_conformance="from offload_testing.suite import *  # noqa: F401,F403\n")
    return pytester.runpytest_subprocess("-q", "-rfs", "-p", "no:cacheprovider", "-k", select)


def failed(result: pytest.RunResult) -> set[str]:
    return {m.group(1) for line in result.outlines if (m := re.match(r"FAILED \S+::(\S+?)(\[| |$)", line))}


def test_zeroed_small_arguments_are_caught(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_kit(pytester, monkeypatch, "ZeroedArguments", "byte_success or multiargs_success")
    names = failed(result)
    assert "test_byte_success" in names, "\n".join(result.outlines[-30:])
    assert "test_multiargs_success" in names, "\n".join(result.outlines[-30:])


def test_made_up_event_times_are_caught(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_kit(pytester, monkeypatch, "MadeUpTimes", "TestEventElapsedTime and success")
    assert "test_success" in failed(result), "\n".join(result.outlines[-30:])
