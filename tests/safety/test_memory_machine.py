"""The memory-lifetime state machine (``machine.py``) in a child process, for a bounded time:
``OFFLOAD_SAFETY_SECONDS`` (default 30) of generated examples on this run's path (the suite runs
it once compiled and once with ``OFFLOAD_COMPILED=0``). A fault fails this test, not the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

HERE = Path(__file__).resolve().parent
SECONDS = float(os.environ.get("OFFLOAD_SAFETY_SECONDS", "30"))


def test_memory_lifetimes_against_a_model() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_") or k in ("OFFLOAD_COMPILED", "OFFLOAD_HOST_CACHE")}
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", str(HERE / "machine.py"), str(SECONDS)],
        capture_output=True, text=True, env=env, timeout=SECONDS * 4 + 300, cwd=HERE,
    )  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"the machine's child exited {proc.returncode} (signal {-proc.returncode} if negative)\n"
        f"stderr (the falsifying example, or where it faulted):\n{proc.stderr[-6000:]}"
    )
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["examples"] >= 5, result
