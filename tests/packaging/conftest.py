"""Fixtures of the packaging tests: ``fresh_checkout``, and the ``wheelhouse`` that
``scripts/wheelhouse.sh`` builds once a session (``OFFLOAD_WHEELHOUSE=DIR`` reuses a folder the
script already filled)."""

from __future__ import annotations

import os
import pathlib
import subprocess
from collections.abc import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_checkout(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """The checkout's files as git would give them (tracked and new, nothing ignored or built)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode().split("\0")
    copy = tmp_path / "checkout"
    for name in filter(None, listed):
        source, target = ROOT / name, copy / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            target.write_bytes(source.read_bytes())
    yield copy


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The folder ``scripts/wheelhouse.sh`` filled: ``wheelhouse/`` (an sdist and a wheel of every
    distribution of ours) and ``thirdparty/`` (the third-party wheels they need)."""
    reuse = os.environ.get("OFFLOAD_WHEELHOUSE")
    if reuse:
        return pathlib.Path(reuse)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "wheelhouse.sh"), str(out)], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out
