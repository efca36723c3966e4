"""The conformance kit as a third-party backend author uses it: two small files, one pytest run.

The backend under test is the host backend registered in-process under another name ("cpu2"),
so its platform is not HOST: copies between host memory and its device go through the backend's
data_submit / data_retrieve hooks, the path every GPU backend takes.
"""

from __future__ import annotations

import re

pytest_plugins = ["pytester"]

CONFTEST = """
import offload
from offload.testing import register_capabilities
from offload_host import HostBackend
from offload_host.conformance import HostCapabilities

offload.register_backend("cpu2", HostBackend)
register_capabilities("cpu2", HostCapabilities)
"""

TEST_FILE = "from offload.testing.suite import *  # noqa: F401,F403\n"


def test_suite_runs_against_an_in_process_backend(pytester, monkeypatch) -> None:
    monkeypatch.setenv("OFFLOAD_TEST_PLATFORM", "cpu2")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_conformance=TEST_FILE)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    summary = result.stdout.lines[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert result.ret == 0, "\n".join(result.stdout.lines[-30:])
    assert "failed" not in summary and "error" not in summary
    assert passed > 250, summary
    assert "cpu2_0" in "\n".join(pytester.runpytest_subprocess("--co", "-q").stdout.lines)
