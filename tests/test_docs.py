"""The documentation site builds with warnings as errors (``mkdocs build --strict``): every page,
the flat API reference generated from the API table, the object layer from the docstrings, and the
timeline picture that the build records and draws itself. Skipped, with the reason, where mkdocs
(docs/requirements.txt, which scripts/test.sh installs) is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_environ

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python", "matplotlib"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -r docs/requirements.txt)")
    from offload._api_table import FUNCTIONS

    site = tmp_path / "site"
    env = child_environ("OFFLOAD_")
    env["NO_MKDOCS_2_WARNING"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flat = (site / "flat-api" / "index.html").read_text()
    assert all(f'id="{f.name.lower()}"' in flat for f in FUNCTIONS), "a function is missing from the reference"
    assert (site / "generated" / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    assert 'src="../generated/timeline.png"' in (site / "tracing" / "index.html").read_text()
    objects = (site / "objects" / "index.html").read_text()
    assert "offload.objects.Array" in objects and "copy_from" in objects
