"""The whole conformance kit (offload.testing), unchanged, on the OpenCL platform (PoCL's CPU
device: a real driver nobody here wrote).

It runs in a child pytest (``OFFLOAD_TEST_PLATFORM=opencl``, strict backend loading); the host
platform is present as well, for the host memory the kit copies to and from. Every skip must name
a feature the OpenCL backend declares absent (globals, constructors, host-memory registration,
cooperative launches), be an absence check of a feature it has, or, where this PoCL cannot
compile for this CPU (``pocl_compiler``), name that reason: the cases without a program still run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import child_environ, run_pytest
from pocl_compiler import NO_COMPILER_ENV, cannot_compile

KIT = Path(__file__).resolve().parent / "kit" / "kit_opencl.py"
ROOT = Path(__file__).resolve().parents[2]

#: The features the OpenCL backend declares absent (its README says why).
ABSENT = (
    "capabilities.globals is False",
    "capabilities.constructors is False",
    "capabilities.mem_register is False",
    "capabilities.cooperative_launch is False",
)
NEEDS_COMPILER = "needs the OpenCL C compiler: "
#: At least this many cases pass with a compiler, and without one (no program: memory, copies,
#: queues, events, info, errors); 422 and 342 on PoCL 3.0 and 3.1.
PASSED_WITH_COMPILER, PASSED_WITHOUT = 400, 320


def _run_kit(show: Any, why: str | None, **extra: str) -> None:
    env = child_environ("OFFLOAD_")
    env.update(OFFLOAD_TEST_PLATFORM="opencl", OFFLOAD_BACKENDS_STRICT="1", **extra)
    if why is not None:
        env[NO_COMPILER_ENV] = why
    proc, summary, counts = run_pytest(["-rs", str(KIT)], env, ROOT)
    show(f"conformance kit on opencl (PoCL{', without its compiler' if why else ''}): {summary}")
    assert proc.returncode == 0, f"kit failed:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    compiling = [line for line in skips if why is not None and NEEDS_COMPILER + why in line]
    unexplained = [
        line for line in skips
        if "(the feature is tested, not its absence)" not in line and not any(a in line for a in ABSENT) and line not in compiling
    ]  # fmt: skip
    print("skips:\n" + "\n".join(skips))
    assert not unexplained, f"skips that name no feature the OpenCL backend declares absent: {unexplained}"
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0 and counts.get("errors", 0) == 0, counts
    assert counts.get("passed", 0) >= (PASSED_WITHOUT if why else PASSED_WITH_COMPILER), summary
    assert bool(compiling) == (why is not None), "the program cases skip exactly where there is no compiler"


def test_conformance_kit_on_opencl(show: Any) -> None:
    why = cannot_compile()
    if why is not None:
        print(f"the kit's program cases skip: {why}")
    _run_kit(show, why)


def test_the_kit_runs_its_other_cases_where_pocl_cannot_compile(show: Any) -> None:
    """PoCL's compiler made to fail (an include that does not exist, through PoCL's
    ``POCL_EXTRA_BUILD_FLAGS``), as the wheel's PoCL fails on a CPU its LLVM does not know: the
    probe says so, naming the CPU, and every case without a program still passes."""
    broken = {"POCL_EXTRA_BUILD_FLAGS": "-include /nonexistent/offload-test.h"}
    why = cannot_compile(**broken)
    assert why is not None and "does not work on this CPU (" in why and "PoCL" in why, why
    _run_kit(show, why, **broken)
