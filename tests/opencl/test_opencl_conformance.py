"""The whole conformance kit (offload.testing), unchanged, on the OpenCL platform (PoCL's CPU
device: a real driver nobody here wrote).

It runs in a child pytest (``OFFLOAD_TEST_PLATFORM=opencl``, strict backend loading); the host
platform is present as well, for the host memory the kit copies to and from. Every skip must name
a feature the OpenCL backend declares absent (globals, constructors, host-memory registration,
cooperative launches)
or be an absence check of a feature it has.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import child_environ, run_pytest

KIT = Path(__file__).resolve().parent / "kit" / "kit_opencl.py"
ROOT = Path(__file__).resolve().parents[2]

#: The features the OpenCL backend declares absent (its README says why).
ABSENT = (
    "capabilities.globals is False",
    "capabilities.constructors is False",
    "capabilities.mem_register is False",
    "capabilities.cooperative_launch is False",
)


def test_conformance_kit_on_opencl(show) -> None:
    env = child_environ("OFFLOAD_")
    env.update(OFFLOAD_TEST_PLATFORM="opencl", OFFLOAD_BACKENDS_STRICT="1")
    proc, summary, counts = run_pytest(["-rs", str(KIT)], env, ROOT)
    show(f"conformance kit on opencl (PoCL): {summary}")
    assert proc.returncode == 0, f"kit failed:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    unexplained = [
        line for line in skips if "(the feature is tested, not its absence)" not in line and not any(a in line for a in ABSENT)
    ]
    print("skips:\n" + "\n".join(skips))
    assert not unexplained, f"skips that name no feature the OpenCL backend declares absent: {unexplained}"
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0 and counts.get("errors", 0) == 0, counts
    assert counts.get("passed", 0) >= 290, summary
