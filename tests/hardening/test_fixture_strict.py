"""The ``sim_session`` fixture does not swallow an error of its final ``olShutDown``: a test
that leaves one (here: a host function that raised on a queue the test destroyed, an error kept
for the final shutdown) fails, and one that leaves none passes. Run as a separate pytest session
(pytester) with this folder's conftest and simdev."""

from __future__ import annotations

import pathlib

import pytest

pytest_plugins = ["pytester"]

HERE = pathlib.Path(__file__).resolve().parent

INNER = '''
import threading
import offload as ol

gate = threading.Event()

def boom(_):
    gate.wait(10)  # still running when its queue is destroyed: the queue is parked, busy
    raise RuntimeError("host function failed")

def test_leaves_an_orphan_error(sim_session):
    _, host = sim_session
    queue = ol.olCreateQueue(host)
    ol.olLaunchHostFunction(queue, boom, None)
    ol.olDestroyQueue(queue)  # the error is kept for the final olShutDown
    gate.set()

def test_leaves_nothing(sim_session):
    _, host = sim_session
    queue = ol.olCreateQueue(host)
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
'''


def test_the_fixture_reports_errors_of_the_final_shutdown(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((HERE / "conftest.py").read_text())
    pytester.makepyfile(simdev=(HERE / "simdev.py").read_text(), helpers=(HERE.parent / "helpers.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*the session's olShutDown failed*host function failed*"])
