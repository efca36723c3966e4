"""The whole conformance kit (offload.testing) on the AMDGPU platform, through the simulated HIP runtime.

It runs in a child pytest (``OFFLOAD_TEST_PLATFORM=amdgpu``) whose ``LD_LIBRARY_PATH`` holds the
simulated libamdhip64.so, with the test programs built by clang-19 for gfx90a. The host platform
is present as well: it provides the host memory the kit copies to and from. Three runs: one
device; two devices (every test on each, the multi-device cases included); one device whose every
stream operation is delayed (``GPUSIM_DELAY_US``), so that a missing synchronisation shows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parent / "kit" / "kit_amdgpu.py"
ROOT = Path(__file__).resolve().parents[2]


RUNS = {"one-device": {}, "two-devices": {"GPUSIM_DEVICES": "2"}, "delayed": {"GPUSIM_DELAY_US": "1000"}}


@pytest.mark.parametrize("run", list(RUNS))
def test_conformance_kit_on_amdgpu(hip_build, run: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "GPUSIM_"))}
    env.update(hip_build.env(OFFLOAD_TEST_PLATFORM="amdgpu", OFFLOAD_BACKENDS_STRICT="1", **RUNS[run]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(KIT)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
    )  # fmt: skip
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    print(f"\nconformance kit on amdgpu (simulated HIP, {run}): {summary}")
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    for line in skipped:
        print(line)
    assert proc.returncode == 0, f"kit failed:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    assert passed >= (550 if run == "two-devices" else 300), summary
