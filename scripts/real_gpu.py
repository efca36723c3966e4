"""The real-GPU run behind scripts/cuda-real.sh and scripts/amdgpu-real.sh: one report file.

    python3 scripts/real_gpu.py cuda|amdgpu [--report PATH] [PYTEST-ARGS...]

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
4. Write the report (Markdown): the machine, the version verdict, every step with its command,
   result, pytest summary and duration, the benchmark figures; step logs beside it. Exit status
   0 when every step passed, else 1.

Only the standard library: it runs with the system python3 before any install.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "tests" / ".build"
PY = str(ROOT / ".venv" / "bin" / "python")

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

    @property
    def status(self) -> str:
        if self.returncode is None:
            return "not run"
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


def run_step(step: Step, logs: Path, env: dict[str, str], timeout: int = 3600) -> Step:
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
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed|error).*?)\s*=*$", output, re.M)
    step.summary = found[-1] if found else ""
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


def cuda_steps(machine: Machine, pytest_args: list[str]) -> list[Step]:
    venv = ["scripts/venv.sh", ".venv", "./core", "./backends/host", "./backends/cuda", ".", "-r", "tests/requirements.txt"]
    build = f"import sys; sys.path.insert(0, 'tests/simulators'); import build; k = build.gpu_kernels(host_builds=False); print(k if isinstance(k, str) else k.root); sys.exit(isinstance(k, str))"
    sanitizer_dir = BUILD / "compute-sanitizer-13.0"
    sanitizer = sanitizer_dir / "nvidia" / "cu13" / "bin" / "compute-sanitizer"
    kit = [PY, "-m", "pytest", "-q", "-rs", "tests/cuda/test_cuda_conformance.py", *pytest_args]
    return [
        Step("prepare .venv", venv),
        Step("install cuda-core==1.2.2", [PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "cuda-core==1.2.2"],
             optional=True, note="for the cuda.core coexistence test (it skips without it)"),  # fmt: skip
        Step(f"build the test kernels for sm_{machine.arch} (cubin, PTX, fatbin)", [PY, "-c", build]),
        Step("conformance kit", kit),
        Step("CUDA tests", [PY, "-m", "pytest", "-q", "-rs", "tests/cuda", "--ignore=tests/cuda/test_cuda_conformance.py", *pytest_args]),
        Step("benchmark bench_cuda.py", [PY, "benchmarks/bench_cuda.py", "--json"]),
        Step(f"install compute-sanitizer ({SANITIZER_PIN})",
             [PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "--target", str(sanitizer_dir), SANITIZER_PIN],
             optional=True),  # fmt: skip
        Step("conformance kit under compute-sanitizer memcheck",
             [str(sanitizer), "--tool", "memcheck", "--target-processes", "all", "--error-exitcode", "3", *kit]),  # fmt: skip
    ]


def amdgpu_steps(machine: Machine, pytest_args: list[str]) -> list[Step]:
    venv = ["scripts/venv.sh", ".venv", "./core", "./backends/host", "./backends/amdgpu", ".", "-r", "tests/requirements.txt"]
    programs = BUILD / f"amdgpu-real-{machine.arch}"
    build = (
        "import sys; sys.path.insert(0, 'tests/simulators/hip'); import hipsim; from pathlib import Path; "
        f"[hipsim.build_code_object(s, {machine.arch!r}, Path({str(programs)!r}) / (s.stem + '.hsaco')) "
        "for s in sorted(hipsim.KERNELS.glob('*.cu'))]"
    )
    kit = [PY, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/amdgpu/kit/kit_amdgpu.py", *pytest_args]
    return [
        Step("prepare .venv", venv),
        Step(f"build the test kernels for {machine.arch} (code objects)", [PY, "-c", build]),
        Step("conformance kit on the real HIP runtime", kit, note=f"OFFLOAD_AMDGPU_PROGRAMS={programs}",
             env={"OFFLOAD_TEST_PLATFORM": "amdgpu", "OFFLOAD_AMDGPU_PROGRAMS": str(programs), "OFFLOAD_BACKENDS_STRICT": "1"}),  # fmt: skip
        Step("AMDGPU tests", [PY, "-m", "pytest", "-q", "-rs", "tests/amdgpu", *pytest_args],
             note="the suite runs on the simulated HIP runtime (it has no real-runtime mode): a check of this machine's build"),  # fmt: skip
        Step("benchmark bench_amdgpu.py", [PY, "benchmarks/bench_amdgpu.py", "--json"],
             note="measures the simulated HIP runtime (bench_amdgpu.py has no real-runtime mode)"),  # fmt: skip
    ]


def run(kind: str, report: Path, pytest_args: list[str]) -> int:
    machine = probe_cuda() if kind == "cuda" else probe_hip()
    print(f"real_gpu: {machine.verdict}", file=sys.stderr, flush=True)
    steps: list[Step] = []
    notes = []
    if machine.version_ok:
        # the steps find their own kernels and programs: nothing of an earlier run's may leak in
        env = {k: v for k, v in os.environ.items()
               if (REHEARSAL or not k.startswith("GPUSIM_")) and k not in ("CUDA_TEST_KERNELS", "OFFLOAD_CUDA_TEST_PROGRAMS")}  # fmt: skip
        if kind == "cuda":
            env.update(OFFLOAD_CUDA_REAL="1", OFFLOAD_CUDA_ARCH=machine.arch)
            planned = cuda_steps(machine, pytest_args)
        else:
            planned = amdgpu_steps(machine, pytest_args)
        logs = report.with_suffix(".logs")
        for step in planned:
            if step.name.startswith("conformance kit under") and steps and steps[-1].returncode != 0:
                step.note = "compute-sanitizer could not be installed from PyPI: the kit did not run under it"
                steps.append(step)
                continue
            steps.append(run_step(step, logs, env))
            if step.name.startswith("benchmark"):
                bench_figures(step)
            if step.returncode != 0 and (step.name == "prepare .venv" or step.name.startswith("build")):
                notes.append(f"{step.name} failed: later steps were not run")
                break
    else:
        notes.append("the driver is too old for the test kernels: nothing was run (update the driver)")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render(machine, steps, notes))
    print(f"real_gpu: report written to {report}", file=sys.stderr)
    counted = [s for s in steps if not s.optional and s.returncode is not None]
    return 0 if machine.version_ok and counted and all(s.returncode == 0 for s in counted) and not notes else 1


def render(machine: Machine, steps: list[Step], notes: list[str]) -> str:
    title = "REHEARSAL on the simulated driver (OFFLOAD_REAL_GPU_REHEARSAL=1): not a GPU" if REHEARSAL else "on a real GPU"
    lines = [f"# offload {machine.kind} {title}", "", f"- when: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"- driver: {machine.verdict}"]  # fmt: skip
    lines += [f"- device {i}: {d['name']} ({d['arch']})" for i, d in enumerate(machine.devices)]
    lines += [f"- note: {n}" for n in notes]
    lines += ["", "| step | result | summary | seconds |", "|---|---|---|---|"]
    for s in steps:
        lines.append(f"| {s.name} | {s.status} | {s.summary or '-'} | {s.seconds:.0f} |")
    for s in steps:
        lines += ["", f"## {s.name}", "", f"- command: `{' '.join(s.command)}`", f"- result: {s.status}"]
        if s.note:
            lines.append(f"- note: {s.note}")
        if s.log:
            lines.append(f"- log: {s.log}")
        for key, value in s.figures.items():
            lines.append(f"- {key}: {value}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("cuda", "amdgpu"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, rest = argv[0], argv[1:]
    report = BUILD / f"{kind}-real-report.md"
    if rest[:1] == ["--report"] and len(rest) > 1:
        report, rest = Path(rest[1]).resolve(), rest[2:]
    try:
        return run(kind, report, rest)
    except Refused as exc:
        print(f"{kind}-real: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
