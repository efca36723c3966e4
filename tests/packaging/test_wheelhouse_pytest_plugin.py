"""offload-core installed without offload-testing leaves another project's pytest alone (no
pytest11 plugin of ours); with offload-testing the kit's plugin loads and the kit runs on the host
backend."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest
from helpers import child_environ

import wheelhouse_support as wh


TINY_TEST = """
import json, os, sys

def test_tiny():
    with open(os.environ["OFFLOAD_REPORT"], "w") as report:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0].startswith("offload")), report)
"""


def _pytest(python: pathlib.Path, project: pathlib.Path, report: pathlib.Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = child_environ(("OFFLOAD_", "PYTHONPATH", "PYTEST_"))
    env["OFFLOAD_REPORT"] = str(report)
    return subprocess.run([str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *extra],
                          cwd=project, capture_output=True, text=True, env=env, timeout=600)  # fmt: skip


def test_offload_core_leaves_other_projects_pytest_alone(wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """offload-core and offload-host installed, offload-testing not: a plain ``pytest`` run of another
    project imports no ``offload`` module (no pytest11 plugin of ours). With offload-testing
    installed the kit's plugin loads, and the kit runs on the host backend."""
    missing = wh.missing(wheelhouse, "offload-host") or wh.missing(wheelhouse, "offload-testing")
    if missing:
        pytest.skip(f"the third-party wheels offload-host and offload-testing need could not be downloaded: {missing}")
    python = wh.fresh_venv(tmp_path / "venv")
    wh.install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", "offload-host", "pytest")
    assert wh.ours(python) == {"offload-core", "offload-host"}
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_tiny.py").write_text(TINY_TEST)
    report = tmp_path / "report.json"
    plain = _pytest(python, project, report)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert json.loads(report.read_text()) == [], "pytest imported offload modules without offload-testing"
    gone = subprocess.run([str(python), "-I", "-c", "import offload.testing.suite"], capture_output=True, text=True, timeout=120)
    assert gone.returncode != 0 and "pip install offload-testing" in gone.stderr, gone.stderr

    wh.install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", "offload-testing")
    with_kit = _pytest(python, project, report)
    assert with_kit.returncode == 0, with_kit.stdout + with_kit.stderr
    assert "offload_testing.plugin" in json.loads(report.read_text())  # the same check sees the plugin now
    (project / "tests" / "conftest.py").write_text("import os\nos.environ.setdefault('OFFLOAD_TEST_PLATFORM', 'host')\n")
    (project / "tests" / "test_conformance.py").write_text("from offload_testing.suite import *  # noqa: F401,F403\n")
    kit = _pytest(python, project, report)
    summary = kit.stdout.strip().splitlines()[-1]
    print(f"\nthe kit from the offload-testing wheel, on the host backend: {summary}")
    assert kit.returncode == 0, kit.stdout[-5000:] + kit.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None and int(passed.group(1)) > 150 and "failed" not in summary, summary
