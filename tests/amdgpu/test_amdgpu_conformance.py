"""The whole conformance kit (offload.testing) on the AMDGPU platform, through the simulated HIP runtime.

It runs in a child pytest (``OFFLOAD_TEST_PLATFORM=amdgpu``) whose ``LD_LIBRARY_PATH`` holds the
simulated libamdhip64.so, with the test programs built by clang-19 for gfx90a. The host platform
is present as well: it provides the host memory the kit copies to and from. Three runs: one
device; two devices (every test on each, the multi-device cases included); one device whose every
stream operation is delayed (``GPUSIM_DELAY_US``), so that a missing synchronisation shows.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import child_environ, run_pytest

KIT = Path(__file__).resolve().parent / "kit" / "kit_amdgpu.py"
ROOT = Path(__file__).resolve().parents[2]


RUNS = {"one-device": {}, "two-devices": {"GPUSIM_DEVICES": "2"}, "delayed": {"GPUSIM_DELAY_US": "1000"}}


@pytest.mark.parametrize("run", list(RUNS))
def test_conformance_kit_on_amdgpu(hip_build, run: str, show) -> None:
    env = child_environ(("OFFLOAD_", "GPUSIM_"))
    env.update(hip_build.env(OFFLOAD_TEST_PLATFORM="amdgpu", OFFLOAD_BACKENDS_STRICT="1", **RUNS[run]))
    proc, summary, counts = run_pytest(["-rs", str(KIT)], env, ROOT)
    show(f"conformance kit on amdgpu (simulated HIP, {run}): {summary}")
    assert proc.returncode == 0, f"kit failed:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    # The kit's absence checks skip, by name, every feature a backend has: not a gap. Anything
    # else skipping is a capability the AMDGPU platform claims and the kit did not exercise.
    skips = [
        line
        for line in proc.stdout.splitlines()
        if line.startswith("SKIPPED") and "(the feature is tested, not its absence)" not in line
    ]
    print(f"skips: {skips}")
    assert not skips, f"the AMDGPU platform claims every capability, nothing may skip: {skips}"
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0 and counts.get("errors", 0) == 0, counts
    assert counts.get("passed", 0) >= (550 if run == "two-devices" else 300), summary
