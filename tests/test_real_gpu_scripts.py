"""scripts/cuda-real.sh and scripts/amdgpu-real.sh refuse in one line where there is no GPU of their
kind: no driver library, or the project's simulator first on the library path (issue 15, part D).
Each runs in a child process with a bounded time: a refusal runs nothing (no install, no build)."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_environ

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


def _module(name: str, path: Path) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _loadable(library: str) -> bool:
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = child_environ(("OFFLOAD_", "GPUSIM_", "LD_LIBRARY_PATH", "ROCM"))
    return subprocess.run(
        [str(SCRIPTS / script)], capture_output=True, text=True, env={**base, **env}, cwd=ROOT, timeout=60
    )


def _one_line_refusal(proc: subprocess.CompletedProcess[str], prefix: str, reason: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(prefix) and reason in lines[0] and lines[0].endswith("nothing was run"), lines[0]


def test_cuda_real_refuses_without_a_driver() -> None:
    if _loadable("libcuda.so.1"):
        pytest.skip("this machine has a CUDA driver: cuda-real.sh would run")
    _one_line_refusal(_run("cuda-real.sh", LD_LIBRARY_PATH=""), "cuda-real: ", "no CUDA driver on this machine")


def test_cuda_real_refuses_the_simulator() -> None:
    build = _module("gpusim_build", ROOT / "tests" / "simulators" / "build.py")
    driver = build.cuda_driver()  # type: ignore[attr-defined]
    proc = _run("cuda-real.sh", LD_LIBRARY_PATH=str(driver))
    _one_line_refusal(proc, "cuda-real: ", "the project's simulator")


def test_amdgpu_real_refuses_without_a_runtime(tmp_path: Path) -> None:
    if _loadable("libamdhip64.so") or (Path("/opt/rocm") / "lib" / "libamdhip64.so").exists():
        pytest.skip("this machine has a HIP runtime: amdgpu-real.sh would run")
    proc = _run("amdgpu-real.sh", LD_LIBRARY_PATH="", ROCM_PATH=str(tmp_path / "no-rocm"))
    _one_line_refusal(proc, "amdgpu-real: ", "no HIP runtime on this machine")


def test_amdgpu_real_refuses_the_simulator(tmp_path: Path) -> None:
    hipsim = _module("hipsim", ROOT / "tests" / "simulators" / "hip" / "hipsim.py")
    runtime = hipsim.build_runtime(tmp_path / "hipsim")  # type: ignore[attr-defined]
    proc = _run("amdgpu-real.sh", LD_LIBRARY_PATH=str(runtime.parent), ROCM_PATH=str(runtime.parent))
    _one_line_refusal(proc, "amdgpu-real: ", "the project's simulator")


# --- the offline run for air-gapped nodes (issue 28, item 9) -------------------------------------


def test_offline_run_refuses_a_missing_bundle(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPTS / "real_gpu.py"), "cuda", "--offline", str(tmp_path / "absent")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [f"cuda-real: no bundle at {tmp_path / 'absent'} (scripts/gpu-bundle.sh prepares "
                                        "it where PyPI is reachable); nothing was run"]  # fmt: skip


def test_offline_is_refused_for_amdgpu(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPTS / "real_gpu.py"), "amdgpu", "--offline", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "--offline is for the CUDA run" in proc.stderr


def _fake_machine(real_gpu: object) -> object:
    return real_gpu.Machine("cuda", "13.0", True, "driver CUDA 13.0 (13000): meets", [{"name": "fake", "arch": "sm_90"}], "90")  # type: ignore[attr-defined]


def test_the_budget_skips_what_does_not_fit_and_the_report_is_written_after_each_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_gpu = _module("real_gpu_under_test", SCRIPTS / "real_gpu.py")
    report = tmp_path / "report.md"

    def steps(machine: object, pytest_args: list[str], plan: object) -> list[object]:
        # the second step reads the report as it stands: the first step is in it already
        peek = f"import pathlib; print(pathlib.Path({str(report)!r}).read_text())"
        return [
            real_gpu.Step("prepare (instant)", [sys.executable, "-c", "print('one'); print('two')"]),  # type: ignore[attr-defined]
            real_gpu.Step("conformance kit", [sys.executable, "-c", peek]),  # type: ignore[attr-defined]
            real_gpu.Step("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], timeout=60),  # type: ignore[attr-defined]
            real_gpu.Step("CUDA tests", [sys.executable, "-c", "print('never')"]),  # type: ignore[attr-defined]
        ]

    monkeypatch.setattr(real_gpu, "probe_cuda", lambda: _fake_machine(real_gpu))
    monkeypatch.setattr(real_gpu, "cuda_steps", steps)
    plan = real_gpu.Plan(tmp_path / "venv", tmp_path, 24.0)  # type: ignore[attr-defined]
    rc = real_gpu.run("cuda", report, [], plan)  # type: ignore[attr-defined]
    text = report.read_text()
    assert rc == 1  # a step that did not run is not a pass
    assert "| prepare (instant) | passed |" in text and "one\ntwo" in text
    peeked = (tmp_path / "report.logs" / "conformance-kit.log").read_text()
    assert "| prepare (instant) | passed |" in peeked and "conformance kit" not in peeked.split("| step")[1]
    assert "| sleeper | FAILED (exit 124) |" in text  # cut at what was left of the budget, not its own 60 s
    assert "| CUDA tests | not run: out of the run's time budget (24 s) |" in text
    assert not (tmp_path / "report.logs" / "CUDA-tests.log").exists()  # never started


def test_a_failed_install_stops_the_run_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_gpu = _module("real_gpu_under_test", SCRIPTS / "real_gpu.py")

    def steps(machine: object, pytest_args: list[str], plan: object) -> list[object]:
        return [
            real_gpu.Step("install offload offline from b", [sys.executable, "-c", "raise SystemExit(3)"]),  # type: ignore[attr-defined]
            real_gpu.Step("conformance kit", [sys.executable, "-c", "print('ran')"]),  # type: ignore[attr-defined]
        ]

    monkeypatch.setattr(real_gpu, "probe_cuda", lambda: _fake_machine(real_gpu))
    monkeypatch.setattr(real_gpu, "cuda_steps", steps)
    report = tmp_path / "report.md"
    assert real_gpu.run("cuda", report, [], real_gpu.Plan(tmp_path / "v", tmp_path, None)) == 1  # type: ignore[attr-defined]
    text = report.read_text()
    assert "install offload offline from b failed: later steps were not run" in text
    assert "| conformance kit | not run: an earlier step it needs failed |" in text


def test_the_offline_venv_sees_the_packages_of_a_virtual_environment_running_it(tmp_path: Path) -> None:
    """The node's python3 is itself a venv (/opt/torch/.venv): a venv made from it with
    --system-site-packages alone would not see its cuda-bindings, numpy or pytest."""
    parent = tmp_path / "node"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(parent)], check=True, timeout=120)
    purelib = subprocess.run([str(parent / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(purelib) / "node_only_module.py").write_text("WHERE = 'node'\n")
    (Path(purelib) / "shadowed_module.py").write_text("WHERE = 'node'\n")
    child = tmp_path / "gpu"
    code = (f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); import gpu_bundle; "
            f"print(gpu_bundle.make_venv(__import__('pathlib').Path({str(child)!r})))")  # fmt: skip
    made = subprocess.run([str(parent / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    own = subprocess.run([str(child / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(own) / "shadowed_module.py").write_text("WHERE = 'gpu'\n")
    probe = "import node_only_module as a, shadowed_module as b; print(a.WHERE, b.WHERE)"
    out = subprocess.run([str(child / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["node", "gpu"], out.stderr  # the parent's packages seen; the venv's own win


def test_find_python_skips_a_candidate_that_does_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu_bundle = _module("gpu_bundle_under_test", SCRIPTS / "gpu_bundle.py")
    broken = tmp_path / "bin" / "python3.99"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'pyenv: python3.99: command not found' >&2; exit 127\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", str(broken.parent))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(gpu_bundle.BundleError, match="no working Python 3.99"):  # type: ignore[attr-defined]
        gpu_bundle.find_python("3.99")  # type: ignore[attr-defined]
    real = tmp_path / "pyenv" / "versions" / "3.99.1" / "bin" / "python3.99"
    real.parent.mkdir(parents=True)
    real.symlink_to(sys.executable)
    assert gpu_bundle.find_python("3.99") == str(real)  # type: ignore[attr-defined]
