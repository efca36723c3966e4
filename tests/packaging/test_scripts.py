"""The scripts: they say what they do, skip the install when no source changed, and CI runs the
README's test command."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
from helpers import child_environ

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _venv_sh(checkout: pathlib.Path, venv: pathlib.Path, *args: str) -> str:
    env = child_environ(("OFFLOAD_", "PYTHONPATH"))
    proc = subprocess.run(
        ["bash", "scripts/venv.sh", str(venv), *args], cwd=checkout, capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stderr


def test_venv_sh_skips_the_install_until_a_source_changes(fresh_checkout: pathlib.Path, tmp_path: pathlib.Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=fresh_checkout, check=True)
    subprocess.run(["git", "add", "-A"], cwd=fresh_checkout, check=True)
    venv = tmp_path / "venv"
    first = _venv_sh(fresh_checkout, venv, "./core")
    assert "creating the virtual environment" in first and "installing into" in first and "is ready" in first
    second = _venv_sh(fresh_checkout, venv, "./core")
    assert "up to date" in second and "installing" not in second
    source = fresh_checkout / "core" / "src" / "offload" / "_values" / "errors.py"
    source.write_text(source.read_text() + "\n# changed\n")
    third = _venv_sh(fresh_checkout, venv, "./core")
    assert "installing into" in third
    installed = list(venv.glob("lib/python*/site-packages/offload/_values/errors.py"))
    assert installed and installed[0].read_text().endswith("# changed\n")


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^scripts/test\.sh\s", readme, re.M), "the README's test command"
    assert re.search(r"^exec scripts/test\.sh$", ci, re.M), ".ci/run must run the README's test command"


def test_scripts_announce_their_steps() -> None:
    for script in ("main.sh", "test.sh"):
        text = (ROOT / "scripts" / script).read_text()
        steps = re.findall(r"\[(\d)/(\d)\]", text) or re.findall(r"step (\d) ", text)
        assert steps, f"{script} says nothing while it works"
