"""real_gpu's steps: what a run on a real GPU does, in order (prepare or install offline, build
the test kernels for the device, the conformance kit, the backend's tests, the benchmark, on CUDA
the kit under compute-sanitizer memcheck), and how one step runs: from the repository root, its
output in a log file, its pytest (and kit, and sanitizer) summary read back.

Only the standard library: it runs with the system python3 before any install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from real_gpu_probe import REHEARSAL, Machine

__all__ = ["BUILD", "LOG_TAIL", "ROOT", "Plan", "Step", "amdgpu_steps", "bench_figures", "cuda_steps", "run_step"]

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "tests" / ".build"
LOG_TAIL = 25  # lines of each step's log in the report
SANITIZER_PIN = "nvidia-cuda-sanitizer-api==13.0.*"


@dataclass
class Step:
    name: str
    command: list[str]
    returncode: int | None = None
    seconds: float = 0.0
    summary: str = ""
    log: str = ""
    note: str = ""
    optional: bool = False  # its failure is reported, not the run's
    env: dict[str, str] = field(default_factory=dict)  # this step's own variables
    figures: dict[str, object] = field(default_factory=dict)
    timeout: float = 3600.0  # the most this step may take (the budget may leave it less)
    skipped: str = ""  # why it was not run
    tail: str = ""  # the end of its log, for the report

    @property
    def status(self) -> str:
        if self.returncode is None:
            return "not run" + (f": {self.skipped}" if self.skipped else "")
        if self.returncode == 0:
            return "passed"
        return f"{'failed, optional' if self.optional else 'FAILED'} (exit {self.returncode})"


def run_step(step: Step, logs: Path, env: dict[str, str], timeout: float = 3600) -> Step:
    """Runs the step's command from the repository root; its output goes to a log file."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / (re.sub(r"\W+", "-", step.name).strip("-") + ".log")
    print(f"real_gpu: {step.name}: {' '.join(step.command)}", file=sys.stderr, flush=True)
    start = time.monotonic()
    try:
        proc = subprocess.run(step.command, cwd=ROOT, env={**env, **step.env}, capture_output=True, text=True, timeout=timeout)
        step.returncode, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        partial = b"".join(x if isinstance(x, bytes) else (x or "").encode() for x in (exc.stdout, exc.stderr))
        step.returncode, output = 124, partial.decode(errors="replace") + f"\ntimed out after {timeout} s"
    step.seconds = time.monotonic() - start
    log.write_text(output)
    step.log = str(log)
    step.tail = "\n".join(output.rstrip().splitlines()[-LOG_TAIL:])
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed|error).*?)\s*=*$", output, re.M)
    step.summary = found[-1] if found else ""
    kits = re.findall(r"^kit on (\w+ \(.*?\)): (\{.*?\})", output, re.M)  # the kit's own counts (test_cuda_conformance's show)
    if kits:
        step.summary = "; ".join([step.summary, *(f"kit {where}: {counts}" for where, counts in kits)]).strip("; ")
    sanitizer = re.findall(r"ERROR SUMMARY: \d+ errors?", output)
    if sanitizer:
        step.summary = f"{step.summary}; {sanitizer[-1]}".strip("; ")
    return step


def bench_figures(step: Step) -> None:
    """The benchmark's JSON document (its stdout) as figures."""
    try:
        text = Path(step.log).read_text()
        document = json.loads(text[text.index("{") : text.rindex("}") + 1])
    except (ValueError, OSError):
        return
    for check in document.get("checks", []):
        step.figures[check["name"]] = f"{check['value']:.3f} (target {check['target']}, {'PASS' if check['passed'] else 'FAIL'})"


@dataclass
class Plan:
    """Where this run installs and what it may fetch."""

    venv: Path
    bundle: Path | None  # --offline: install from this folder, fetch nothing
    budget: float | None  # seconds for the whole run

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def machine_sanitizer() -> str | None:
    """The machine's own compute-sanitizer: PATH, ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "compute-sanitizer").is_file():
            return str(Path(home) / "bin" / "compute-sanitizer")
    return None


def cuda_steps(machine: Machine, pytest_args: list[str], plan: Plan) -> list[Step]:
    py = plan.python
    # a rehearsal's simulated driver runs the kernels' host builds (GPUSIM_KERNELS, set after this step)
    build = f"import sys; sys.path.insert(0, 'tests/simulators'); import build; k = build.gpu_kernels(host_builds={REHEARSAL}); print(k if isinstance(k, str) else k.root); sys.exit(isinstance(k, str))"
    kit = [py, "-m", "pytest", "-q", "-rs", "tests/cuda/test_cuda_conformance.py", *pytest_args]
    sanitizer = machine_sanitizer()
    steps = []
    if plan.bundle is not None:
        steps.append(Step(f"install offload offline from {plan.bundle.name}",
                          [sys.executable, "scripts/gpu_bundle.py", "install", "--bundle", str(plan.bundle), "--venv", str(plan.venv)],
                          timeout=300, note="pip --no-index: the bundle's wheels and the node's own packages"))  # fmt: skip
    else:
        venv = ["scripts/venv.sh", str(plan.venv), "./core", "./backends/host", "./backends/cuda", "./testing", ".", "-r", "tests/requirements.txt"]
        steps += [
            Step("prepare .venv", venv),
            Step("install cuda-core==1.2.2", [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "cuda-core==1.2.2"],
                 optional=True, note="for the cuda.core coexistence test (it skips without it)"),  # fmt: skip
        ]
        if sanitizer is None:  # not on the machine: the toolkit's wheel from PyPI
            target = BUILD / "compute-sanitizer-13.0"
            sanitizer = str(target / "nvidia" / "cu13" / "bin" / "compute-sanitizer")
            steps.append(Step(f"install compute-sanitizer ({SANITIZER_PIN})",
                              [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "--target", str(target), SANITIZER_PIN],
                              optional=True))  # fmt: skip
    steps += [
        Step(f"build the test kernels for sm_{machine.arch} (cubin, PTX, fatbin)", [py, "-c", build], timeout=300),
        Step("conformance kit", kit, timeout=300),
    ]
    memcheck = "conformance kit under compute-sanitizer memcheck"
    if sanitizer is not None:
        steps.append(Step(memcheck, [sanitizer, "--tool", "memcheck", "--target-processes", "all", "--error-exitcode", "3", *kit], timeout=300))
    else:
        steps.append(Step(memcheck, [], optional=True, skipped="no compute-sanitizer on this machine (looked on PATH, in "
                          "$CUDA_HOME/bin and /usr/local/cuda/bin; offline, nothing is fetched)"))  # fmt: skip
    steps += [
        Step("CUDA tests", [py, "-m", "pytest", "-q", "-rs", "tests/cuda", "--ignore=tests/cuda/test_cuda_conformance.py", *pytest_args]),
        Step("benchmark bench_cuda.py", [py, "benchmarks/bench_cuda.py", "--json"], timeout=300),
    ]
    return steps


def amdgpu_steps(machine: Machine, pytest_args: list[str], plan: Plan) -> list[Step]:
    py = plan.python
    venv = ["scripts/venv.sh", str(plan.venv), "./core", "./backends/host", "./backends/amdgpu", "./testing", ".", "-r", "tests/requirements.txt"]
    programs = BUILD / f"amdgpu-real-{machine.arch}"
    build = (
        "import sys; sys.path.insert(0, 'tests/simulators/hip'); import hipsim; from pathlib import Path; "
        f"[hipsim.build_code_object(s, {machine.arch!r}, Path({str(programs)!r}) / (s.stem + '.hsaco')) "
        "for s in sorted(hipsim.KERNELS.glob('*.cu'))]"
    )
    kit = [py, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/amdgpu/kit/kit_amdgpu.py", *pytest_args]
    return [
        Step("prepare .venv", venv),
        Step(f"build the test kernels for {machine.arch} (code objects)", [py, "-c", build]),
        Step("conformance kit on the real HIP runtime", kit, note=f"OFFLOAD_AMDGPU_PROGRAMS={programs}",
             env={"OFFLOAD_TEST_PLATFORM": "amdgpu", "OFFLOAD_AMDGPU_PROGRAMS": str(programs), "OFFLOAD_BACKENDS_STRICT": "1"}),  # fmt: skip
        Step("AMDGPU tests", [py, "-m", "pytest", "-q", "-rs", "tests/amdgpu", *pytest_args],
             note="the suite runs on the simulated HIP runtime (it has no real-runtime mode): a check of this machine's build"),  # fmt: skip
        Step("benchmark bench_amdgpu.py", [py, "benchmarks/bench_amdgpu.py", "--json"],
             note="measures the simulated HIP runtime (bench_amdgpu.py has no real-runtime mode)"),  # fmt: skip
    ]
