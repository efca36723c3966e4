"""The real-GPU run behind scripts/cuda-real.sh and scripts/amdgpu-real.sh: one report file.

    python3 scripts/real_gpu.py cuda|amdgpu [--report PATH] [--offline BUNDLE] [--budget SECONDS] [PYTEST-ARGS...]

1. Probe the machine's own driver with ctypes (no virtual environment yet): without a usable
   GPU of that kind (no driver library, no device, or the project's simulator first on the
   library path) it refuses in one line and exits 1, having run nothing.
2. Check the driver's version against what the test kernels built here need (CUDA: nvcc 13.0
   output, cubin ELF ABI 8 and PTX ISA 9.0, needs a 13.0 driver; AMDGPU: clang-19 code objects
   v5, ROCm 6.0 or newer) and say so; a driver too old stops the run (reported).
3. Prepare ``.venv``, build the test kernels for the device's own architecture (CUDA: sm_XX
   cubin, its PTX and a fatbin of both; AMDGPU: a code object for its gfx target; amdgcn has no
   portable form like PTX), then run the conformance kit, the backend's tests, the benchmark
   (its held batches stay under the push buffer) and, on CUDA where the toolkit's
   compute-sanitizer installs from PyPI (nvidia-cuda-sanitizer-api 13.0), the kit under memcheck.
4. Write the report (Markdown), again after every step so that a run stopped from outside still
   leaves one: the machine, the version verdict, every step with its command, result, pytest
   summary, duration and the end of its log, the benchmark figures; whole step logs beside it.
   Exit status 0 when every step passed, else 1.

``--offline BUNDLE`` (CUDA; an air-gapped node): nothing is fetched. The first step installs
offload into ``.venv-gpu`` from the bundle ``scripts/gpu-bundle.sh`` prepared (scripts/gpu_bundle.py:
the node's own packages seen through ``--system-site-packages``); cuda.core and compute-sanitizer
are the node's own. ``--budget SECONDS`` bounds the whole run (default 540 offline, none otherwise):
each step's timeout is what is left, and a step with too little left is reported as not run.

Only the standard library: it runs with the system python3 before any install.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its modules beside it, also when loaded by path
from real_gpu_probe import REHEARSAL, Machine, Refused, probe_cuda, probe_hip  # noqa: E402
from real_gpu_steps import BUILD, LOG_TAIL, ROOT, Plan, Step, amdgpu_steps, bench_figures, cuda_steps, run_step  # noqa: E402

__all__ = ["Machine", "Plan", "Refused", "Step", "main", "render", "run"]

VENV = ROOT / ".venv"
OFFLINE_VENV = ROOT / ".venv-gpu"
OFFLINE_BUDGET = 540.0  # the node's one command may run 10 minutes: the install and the report fit in the rest


MIN_STEP_SECONDS = 20.0  # a step with less of the budget left is reported as not run
STOPS_THE_RUN = ("prepare", "install offload", "build")  # a failure of these leaves nothing to test


def run(kind: str, report: Path, pytest_args: list[str], plan: Plan) -> int:
    started = time.monotonic()
    machine = probe_cuda() if kind == "cuda" else probe_hip()
    print(f"real_gpu: {machine.verdict}", file=sys.stderr, flush=True)
    steps: list[Step] = []
    notes = []
    if plan.bundle is not None:
        notes.append(f"offline: offload installed from {plan.bundle} with pip --no-index; nothing was fetched")
    report.parent.mkdir(parents=True, exist_ok=True)
    stopped = False
    if machine.version_ok:
        # the steps find their own kernels and programs: nothing of an earlier run's may leak in
        env = {k: v for k, v in os.environ.items()
               if (REHEARSAL or not k.startswith("GPUSIM_")) and k not in ("CUDA_TEST_KERNELS", "OFFLOAD_CUDA_TEST_PROGRAMS")}  # fmt: skip
        if plan.bundle is not None:
            env["PIP_NO_INDEX"] = "1"  # nothing a step runs may reach for an index
        if kind == "cuda":
            env.update(OFFLOAD_CUDA_REAL="1", OFFLOAD_CUDA_ARCH=machine.arch)
            planned = cuda_steps(machine, pytest_args, plan)
        else:
            planned = amdgpu_steps(machine, pytest_args, plan)
        logs = report.with_suffix(".logs")
        for step in planned:
            left = None if plan.budget is None else plan.budget - (time.monotonic() - started)
            installed = next((s for s in steps if s.name.startswith("install compute-sanitizer")), None)
            if step.skipped:
                pass
            elif stopped:
                step.skipped = "an earlier step it needs failed"
            elif step.name.startswith("conformance kit under") and installed is not None and installed.returncode != 0:
                step.optional, step.skipped = True, "compute-sanitizer could not be installed from PyPI"
            elif left is not None and left < MIN_STEP_SECONDS:
                step.skipped = f"out of the run's time budget ({plan.budget:.0f} s)"
            else:
                run_step(step, logs, env, timeout=step.timeout if left is None else min(step.timeout, left - 5))
                if step.name.startswith("benchmark"):
                    bench_figures(step)
                if REHEARSAL and step.name.startswith("build the test kernels") and step.returncode == 0 and kind == "cuda":
                    printed = Path(step.log).read_text().strip().splitlines()
                    env["GPUSIM_KERNELS"] = str(Path(printed[-1]) / "registry")  # the simulator's stand-in for a GPU
                if step.returncode != 0 and step.name.startswith(STOPS_THE_RUN):
                    notes.append(f"{step.name} failed: later steps were not run")
                    stopped = True
            steps.append(step)
            report.write_text(render(machine, steps, notes))  # a run stopped from outside still leaves its report
    else:
        notes.append("the driver is too old for the test kernels: nothing was run (update the driver)")
    notes.append(f"the run took {time.monotonic() - started:.0f} s")
    report.write_text(render(machine, steps, notes))
    print(f"real_gpu: report written to {report}", file=sys.stderr)
    counted = [s for s in steps if not s.optional]
    return 0 if machine.version_ok and counted and all(s.returncode == 0 for s in counted) else 1


def render(machine: Machine, steps: list[Step], notes: list[str]) -> str:
    title = "REHEARSAL on the simulated driver (OFFLOAD_REAL_GPU_REHEARSAL=1): not a GPU" if REHEARSAL else "on a real GPU"
    lines = [f"# offload {machine.kind} {title}", "", f"- when: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"- driver: {machine.verdict}"]  # fmt: skip
    lines += [f"- device {i}: {d['name']} ({d['arch']})" for i, d in enumerate(machine.devices)]
    lines += [f"- note: {n}" for n in notes]
    lines += ["", "| step | result | summary | seconds |", "|---|---|---|---|"]
    for s in steps:
        lines.append(f"| {s.name} | {s.status} | {s.summary or '-'} | {s.seconds:.0f} |")
    fence = "`" * 3
    for s in steps:
        lines += ["", f"## {s.name}", "", f"- command: `{' '.join(s.command) or '-'}`", f"- result: {s.status}"]
        if s.note:
            lines.append(f"- note: {s.note}")
        if s.log:
            lines.append(f"- log: {s.log}")
        for key, value in s.figures.items():
            lines.append(f"- {key}: {value}")
        if s.tail:
            lines += ["", f"The end of its log ({LOG_TAIL} lines at most):", "", fence, s.tail.replace(fence, "'''"), fence]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("cuda", "amdgpu"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, rest = argv[0], argv[1:]
    report = BUILD / f"{kind}-real-report.md"
    bundle: Path | None = None
    budget: float | None = None
    while len(rest) > 1 and rest[0] in ("--report", "--offline", "--budget"):
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--report":
            report = Path(value).resolve()
        elif flag == "--offline":
            bundle = Path(value).resolve()
        else:
            budget = float(value)
    if bundle is not None and kind != "cuda":
        print(f"{kind}-real: --offline is for the CUDA run (the AMDGPU run has no bundle); nothing was run", file=sys.stderr)
        return 2
    if bundle is not None and not bundle.is_dir():
        print(f"{kind}-real: no bundle at {bundle} (scripts/gpu-bundle.sh prepares it where PyPI is reachable); nothing was run",
              file=sys.stderr)  # fmt: skip
        return 1
    if bundle is not None and budget is None:
        budget = OFFLINE_BUDGET
    plan = Plan(OFFLINE_VENV if bundle is not None else VENV, bundle, budget)
    try:
        return run(kind, report, rest, plan)
    except Refused as exc:
        print(f"{kind}-real: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
