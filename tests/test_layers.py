"""The core's layers as packages (core/DESIGN.md "Layers"): the old public module names of what
backend authors import still work, as the very modules they moved to, with a DeprecationWarning."""

from __future__ import annotations

import subprocess
import sys

import pytest

MOVED = {
    "offload.backend_support": "offload.backend.support",
    "offload.native_support": "offload.backend.native",
    "offload.build_support": "offload.backend.build",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_public_module_name_is_the_moved_module_and_warns(old: str) -> None:
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"new = importlib.import_module({MOVED[old]!r})\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"print(importlib.import_module({old!r}) is new)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [f"warned: {old} moved to {MOVED[old]}", "True"], run.stdout
