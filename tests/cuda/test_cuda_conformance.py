"""The conformance kit (offload.testing), unchanged, on the CUDA platform.

Each run is a child pytest process over kit_cuda.py with OFFLOAD_TEST_PLATFORM=cuda, against the
simulated driver (or a real one with OFFLOAD_CUDA_REAL=1): cubin programs on two devices (so the
cases that need a second device run), PTX and fatbin programs on one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import run_pytest

KIT = Path(__file__).with_name("kit_cuda.py")


def _run_kit(env: dict[str, str]) -> tuple[dict[str, int], str, str]:
    # --capture=sys: the driver's own writes to fd 2 (the simulator's leak reports) reach stderr
    proc, _, counts = run_pytest(["-rs", "--capture=sys", str(KIT)], env, KIT.parent)
    assert proc.returncode == 0, f"the kit failed on CUDA:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    return counts, proc.stdout, proc.stderr


@pytest.mark.parametrize(("fmt", "devices"), [("cubin", 2), ("ptx", 1), ("fatbin", 1)])
def test_kit_on_cuda(fmt: str, devices: int, kernels: Any, child_env: Any, simulator: Any, show: Any) -> None:
    if simulator is None and fmt != "cubin":
        pytest.skip("the real-driver run uses cubin programs only")
    env = child_env(devices=devices, kernels=kernels, OFFLOAD_TEST_PLATFORM="cuda")
    env["OFFLOAD_CUDA_TEST_PROGRAMS"] = str(kernels.programs_dir(fmt))
    counts, out, err = _run_kit(env)
    # The kit's absence checks skip, by name, every feature a backend has: not a gap.
    skips = [
        line
        for line in out.splitlines()
        if line.startswith("SKIPPED") and "(the feature is tested, not its absence)" not in line
    ]
    show(f"kit on cuda ({fmt}, {devices} device(s)): {counts}; skips other than absence checks: {skips}")
    assert counts.get("passed", 0) > 250, counts
    assert counts.get("failed", 0) == 0
    if simulator is not None:
        assert not skips, f"the CUDA platform claims every capability, nothing may skip: {skips}"
        leaks = [line for line in err.splitlines() if line.startswith("gpusim: leak")]
        assert not leaks, f"device memory left allocated when a primary context was released: {leaks[:5]}"
