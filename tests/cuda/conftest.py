"""Fixtures of the CUDA backend's tests.

Every test that talks to a CUDA driver runs Python in a child process: the driver is chosen by
``LD_LIBRARY_PATH`` when ``libcuda.so.1`` is first loaded, and a crash must fail one test, not the
session. By default the driver is the project's simulated one (tests/simulators), built here;
with ``OFFLOAD_CUDA_REAL=1`` the children use the machine's real driver and the
simulator-only tests skip (scripts/cuda-real.sh).
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import child_environ


def _load_build_module() -> Any:
    """tests/simulators/build.py, under a name no installed package shadows."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "simulators" / "build.py"
    spec = importlib.util.spec_from_file_location("gpusim_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpusim_build"] = module
    spec.loader.exec_module(module)
    return module


build = _load_build_module()

REAL = os.environ.get("OFFLOAD_CUDA_REAL") == "1"
#: scripts/cuda-real-rehearsal.sh: a real-driver run whose "GPU" is the simulated driver, so its
#: documented limits (tests/simulators/README.md) still hold
REHEARSAL = REAL and os.environ.get("OFFLOAD_REAL_GPU_REHEARSAL") == "1"


def real_device_count() -> int:
    """The devices the machine's driver reports (a real-driver run: one H200, say)."""
    lib = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


@dataclass
class Child:
    """What a child process printed: ``result`` is the JSON object of its last stdout line."""

    returncode: int
    stdout: str
    stderr: str
    result: Any


@pytest.fixture(scope="session")
def simulator() -> Path | None:
    """The directory of the simulated ``libcuda.so.1`` (None against a real driver)."""
    if REAL:
        return None
    try:
        return build.cuda_driver()
    except build.BuildError as exc:
        pytest.fail(f"the simulated CUDA driver does not build: {exc}")


@pytest.fixture(scope="session")
def kernels() -> Any:
    """The GPU test kernels built with nvcc 13.0 (and their host builds for the simulator)."""
    try:
        found = build.gpu_kernels(host_builds=not REAL)
    except build.BuildError as exc:
        pytest.fail(f"the GPU test kernels do not build: {exc}")
    if isinstance(found, str):
        print(f"\nCUDA kernel tests skipped: {found}", file=sys.stderr)
        pytest.skip(f"cannot build the GPU test kernels: {found}")
    return found


@pytest.fixture(scope="session")
def child_env(simulator: Path | None) -> Callable[..., dict[str, str]]:
    """``child_env(devices=1, delay_us=0, kernels=None, **extra)``: a child's environment."""

    def make(devices: int = 1, delay_us: int = 0, kernels: Any = None, **extra: str) -> dict[str, str]:
        # a real-driver run keeps GPUSIM_*: scripts/real_gpu.py passes them only to a rehearsal, whose
        # stand-in "GPU" is the simulator running the kernels' host builds (GPUSIM_KERNELS)
        base = child_environ("OFFLOAD_" if REAL else ("OFFLOAD_", "GPUSIM_"))
        if simulator is None:
            env = base
        else:
            env = build.simulator_env(simulator, kernels, devices=devices, delay_us=delay_us, base=base)
        if kernels is not None:
            env["OFFLOAD_CUDA_TEST_PROGRAMS"] = str(kernels.programs_dir("cubin"))
            env["CUDA_TEST_KERNELS"] = str(kernels.root)
        env.update(extra)
        return env

    return make


@pytest.fixture(scope="session")
def run_child() -> Callable[..., Child]:
    """``run_child(code, env)``: run ``code`` in a fresh interpreter; the last stdout line is JSON."""

    def run(code: str, env: dict[str, str], timeout: float = 180, check: bool = True) -> Child:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout)
        lines = proc.stdout.strip().splitlines()
        result = None
        if lines:
            try:
                result = json.loads(lines[-1])
            except json.JSONDecodeError:
                result = None
        if check and proc.returncode != 0:
            raise AssertionError(f"child exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return Child(proc.returncode, proc.stdout, proc.stderr, result)

    return run


@pytest.fixture(scope="session")
def rehearsal() -> bool:
    """Whether this real-driver run is a rehearsal on the simulated driver (REHEARSAL)."""
    return REHEARSAL


@pytest.fixture(scope="session")
def need_devices(simulator: Path | None) -> Callable[[int], None]:
    """``need_devices(n)``: skip where the real driver has fewer than n devices (the simulator has
    as many as a test asks for)."""

    def need(count: int) -> None:
        if simulator is None and (found := real_device_count()) < count:
            pytest.skip(f"needs {count} CUDA devices; this machine's driver reports {found}")

    return need


@pytest.fixture
def simulated(simulator: Path | None) -> Path:
    """Skip a test that needs the simulator's knobs when running against a real driver."""
    if simulator is None:
        pytest.skip("needs the simulated CUDA driver (OFFLOAD_CUDA_REAL=1 runs on a real one)")
    return simulator


@pytest.fixture
def cuda_core() -> None:
    """Skips the test where cuda.core cannot be imported, saying why: the reason scripts/test.sh
    wrote when its install failed (``.venv/cuda-core-unavailable.txt``), or that it is not installed."""
    try:
        found = importlib.util.find_spec("cuda.core") is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        recorded = Path(sys.prefix) / "cuda-core-unavailable.txt"
        pytest.skip(recorded.read_text().strip() if recorded.is_file() else "cuda.core is not installed (scripts/test.sh installs cuda-core==1.2.2 from PyPI)")


@pytest.fixture
def beside_cuda_core(
    run_child: Callable[..., Child], child_env: Callable[..., dict[str, str]], kernels: Any, simulator: Path | None, cuda_core: None
) -> Callable[[str], Any]:
    """``beside_cuda_core(code)``: run a child of offload beside cuda.core (the test skips without
    cuda.core) with the test kernels; its result, once the simulated driver reported no leak."""

    def run(code: str) -> Any:
        child = run_child(code, child_env(kernels=kernels))
        if simulator is not None:
            assert "gpusim: leak" not in child.stderr, child.stderr
        return child.result

    return run
