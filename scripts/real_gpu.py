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

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "tests" / ".build"
VENV = ROOT / ".venv"
OFFLINE_VENV = ROOT / ".venv-gpu"
OFFLINE_BUDGET = 540.0  # the node's one command may run 10 minutes: the install and the report fit in the rest
LOG_TAIL = 25  # lines of each step's log in the report

CUDA_DRIVER_NEEDED = 13000  # nvcc 13.0's cubin (ELF ABI 8) and PTX ISA 9.0 need a 13.0 driver
ROCM_NEEDED = (6, 0)  # clang-19 writes code object v5 by default
SANITIZER_PIN = "nvidia-cuda-sanitizer-api==13.0.*"
#: OFFLOAD_REAL_GPU_REHEARSAL=1 accepts the project's simulator, to check this script on a machine
#: without a GPU; the report's title then says so. Its figures are not a GPU's.
REHEARSAL = os.environ.get("OFFLOAD_REAL_GPU_REHEARSAL") == "1"


class Refused(Exception):
    """No usable GPU of the kind asked: the one line to print."""


@dataclass
class Machine:
    kind: str
    driver: str  # human-readable version
    version_ok: bool
    verdict: str  # the sentence about the driver version
    devices: list[dict[str, str]]
    arch: str  # what the kernels are built for: "90" (CUDA SM) or "gfx90a"


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


# --- probes -------------------------------------------------------------------------------------


def probe_cuda() -> Machine:
    """The CUDA driver of this machine (libcuda.so.1 through the dynamic loader)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise Refused(f"no CUDA driver on this machine ({exc}); nothing was run") from None
    rc = lib.cuInit(0)
    if rc != 0:
        raise Refused(f"the CUDA driver has no usable device (cuInit returned {rc}); nothing was run")
    version, count = ctypes.c_int(), ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(version))
    lib.cuDeviceGetCount(ctypes.byref(count))
    devices = []
    for ordinal in range(count.value):
        handle, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGet(ctypes.byref(handle), ordinal)
        lib.cuDeviceGetName(name, 256, handle)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, handle)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, handle)
        devices.append({"name": name.value.decode(errors="replace"), "arch": f"sm_{major.value}{minor.value}"})
    if not devices:
        raise Refused("the CUDA driver reports no device; nothing was run")
    if any("simulated" in d["name"] for d in devices) and not REHEARSAL:
        raise Refused("the CUDA driver found is the project's simulator (tests/simulators), not a GPU; nothing was run")
    v = version.value
    ok = v >= CUDA_DRIVER_NEEDED
    verdict = (
        f"driver CUDA {v // 1000}.{v % 1000 // 10} ({v}): "
        + ("meets" if ok else "is older than")
        + " the 13.0 the test kernels need (nvcc 13.0: cubin ELF ABI 8, PTX ISA 9.0)"
    )
    return Machine("cuda", f"{v // 1000}.{v % 1000 // 10}", ok, verdict, devices, devices[0]["arch"][3:])


def _load_hip() -> ctypes.CDLL:
    candidates = [Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "lib" / "libamdhip64.so", Path("libamdhip64.so")]
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(str(path))
        except OSError as exc:
            errors.append(str(exc))
    raise Refused(f"no HIP runtime on this machine ({'; '.join(errors)}); nothing was run")


def probe_hip() -> Machine:
    """The HIP runtime of this machine ($ROCM_PATH/lib, /opt/rocm/lib, then the loader's path)."""
    lib = _load_hip()
    count = ctypes.c_int()
    rc = lib.hipGetDeviceCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        raise Refused(f"the HIP runtime has no usable device (hipGetDeviceCount returned {rc}); nothing was run")
    version = ctypes.c_int()
    lib.hipDriverGetVersion(ctypes.byref(version))
    getter = getattr(lib, "hipGetDevicePropertiesR0600", None) or lib.hipGetDeviceProperties
    devices = []
    for ordinal in range(count.value):
        props = ctypes.create_string_buffer(4096)  # hipDeviceProp_tR0600 is 1472 bytes
        getter(props, ordinal)
        name = props.raw[:256].split(b"\0", 1)[0].decode(errors="replace")
        gcn = props.raw[1160:1416].split(b"\0", 1)[0].decode(errors="replace")
        devices.append({"name": name, "arch": gcn})
    if any("gpusim" in d["name"] for d in devices) and not REHEARSAL:
        raise Refused("the HIP runtime found is the project's simulator (tests/simulators), not a GPU; nothing was run")
    v = version.value
    major, minor = v // 10_000_000, v // 100_000 % 100
    ok = (major, minor) >= ROCM_NEEDED
    verdict = (
        f"HIP driver {major}.{minor} ({v}): "
        + ("meets" if ok else "is older than")
        + " the ROCm 6.0 the test kernels need (clang-19 code objects v5)"
    )
    target = devices[0]["arch"].split(":", 1)[0]
    return Machine("amdgpu", f"{major}.{minor}", ok, verdict, devices, target)


# --- steps --------------------------------------------------------------------------------------


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
