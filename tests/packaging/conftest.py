"""Fixtures of the packaging tests."""

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
