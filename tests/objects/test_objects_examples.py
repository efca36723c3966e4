"""The example scripts run: the host one always, the cuda and amdgpu ones where those platforms are present."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from objects_support import platform_ids
from helpers import child_environ

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_environ("OFFLOAD_")
    return subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / script), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_host_example() -> None:
    proc = _run("objects_host.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "ok" and "saxpy over" in proc.stdout


@pytest.mark.parametrize("platform", ["cuda", "amdgpu"])
def test_gpu_examples(platform: str) -> None:
    if not any(i.startswith(platform + ":") for i in platform_ids()):
        pytest.skip(f"no {platform} device here (the offload-{platform} backend is not installed or finds none)")
    proc = _run(f"objects_{platform}.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "ok"


def test_heat_example() -> None:
    """The heat equation of the docs (docs/objects.md): zeros, slicing, a 2-D launch, checked against numpy."""
    proc = _run("heat.py", "host:0")  # (GPUs: test_build_everywhere.py, where the simulators run built kernels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "ok" and "40 steps of a 48x64 grid" in proc.stdout


def test_the_docs_show_the_heat_example_as_it_is() -> None:
    """docs/objects.md shows examples/heat.py whole: the example CI runs is the one readers see."""
    docs = (EXAMPLES.parent / "docs" / "objects.md").read_text()
    section = docs[docs.index("### Example: the heat equation") :]
    shown = section[section.index("```python\n") + len("```python\n") :]
    assert shown[: shown.index("```\n")] == (EXAMPLES / "heat.py").read_text()
