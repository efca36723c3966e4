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

TEST_FILE = "from offload_testing.suite import *  # noqa: F401,F403\n"


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


def _docstring_blocks(doc: str) -> list[str]:
    """The literal blocks (after a line ending in ``::``) of a reST docstring, dedented."""
    import textwrap

    blocks, lines, i = [], doc.splitlines(), 0
    while i < len(lines):
        if lines[i].rstrip().endswith("::"):
            i += 1
            body = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("       ")):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(body)).strip() + "\n")
        else:
            i += 1
    return blocks


def test_docstring_example_runs_as_written(pytester, monkeypatch) -> None:
    """offload.testing's example, file by file, against a generated (not installed) backend."""
    import offload.testing
    from offload.cli._new_backend import write_package

    write_package("mydev", pytester.path)
    blocks = _docstring_blocks(offload.testing.__doc__)
    files = {b.splitlines()[0][2:]: b for b in blocks if b.startswith("# ")}
    assert set(files) == {"src/offload_mydev/conformance.py", "tests/conftest.py", "tests/test_conformance.py"}
    for path, text in files.items():
        (pytester.path / path).write_text(text)
    entry_point = next(b for b in blocks if b.startswith('[project.entry-points."offload.conformance"]'))
    assert entry_point in (pytester.path / "pyproject.toml").read_text()

    monkeypatch.setenv("PYTHONPATH", str(pytester.path / "src"))
    monkeypatch.setenv("OFFLOAD_TEST_PLATFORM", "mydev")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "tests")
    outcomes = result.parseoutcomes()
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    assert outcomes.get("failed", 0) == 0 and outcomes["passed"] > 150, outcomes
