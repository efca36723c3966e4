"""offload.build on every platform: the one portable saxpy source (examples/kernels/saxpy_portable.c)
runs on the host, on CUDA (the simulated driver; NVRTC and nvcc) and on AMDGPU (the simulated HIP
runtime; clang-19), through examples/build_everywhere.py; compile errors carry each compiler's
log and a missing compiler is HOST_TOOL_NOT_FOUND. Each case runs in a child process with both
simulators on LD_LIBRARY_PATH and tests/simulators/build_listener.py registering the simulators'
host builds of what offload.build makes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import child_environ

ROOT = Path(__file__).resolve().parents[1]
SIMULATORS = ROOT / "tests" / "simulators"
sys.path.insert(0, str(SIMULATORS / "hip"))
import hipsim  # noqa: E402


def _gpusim_build() -> Any:
    if "gpusim_build" in sys.modules:
        return sys.modules["gpusim_build"]
    spec = importlib.util.spec_from_file_location("gpusim_build", SIMULATORS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpusim_build"] = module
    spec.loader.exec_module(module)
    return module


PROLOGUE = f"""
import json, pathlib, runpy, sys, os
sys.path.insert(0, {str(SIMULATORS)!r})
import build_listener, offload
registry = pathlib.Path(os.environ["GPUSIM_KERNELS"])
build_listener.install(registry, registry.parent / "work")
def emit(value):
    print("RESULT " + json.dumps(value), flush=True)
"""


@pytest.fixture(scope="module")
def simulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a child with both simulated drivers (the AMDGPU one only with clang-19)."""
    if os.environ.get("OFFLOAD_CUDA_REAL") == "1":
        pytest.skip("runs on the simulated drivers only")
    base = tmp_path_factory.mktemp("build-everywhere")
    cuda = _gpusim_build().cuda_driver()
    hip = hipsim.build_runtime(base / "hipsim").parent
    env = child_environ(("OFFLOAD_", "GPUSIM_"))
    env.update(
        LD_LIBRARY_PATH=f"{cuda}:{hip}",
        GPUSIM_KERNELS=str(base / "registry"),
        GPUSIM_DEVICES="1",
        ROCM_PATH=str(base / "no-rocm"),
        OFFLOAD_BACKENDS_STRICT="1",
    )
    try:
        hipsim.clang_toolchain()
    except hipsim.Unavailable as exc:
        print(f"\nAMDGPU builds skipped: {exc}", file=sys.__stderr__)
        env["OFFLOAD_BACKENDS"] = "host,cuda"
    return env


def _child(code: str, env: dict[str, str]) -> Any:
    proc = subprocess.run([sys.executable, "-c", PROLOGUE + code], capture_output=True, text=True, env=env, timeout=600)
    results = [line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not results:
        raise AssertionError(f"child exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return json.loads(results[-1])


def _build_error(source: str, env: dict[str, str], platform: str = "cuda") -> Any:
    """[code name, details] of the OffloadError that ``offload.build(source)`` raises for the
    platform's device (in a child with ``env``); the child prints nothing, so a build that succeeds
    fails."""
    return _child(
        f"""
(device,) = offload.devices({platform!r})
try:
    offload.build({source!r}, device)
except offload.OffloadError as error:
    emit([error.code.name, error.details])
""",
        env,
    )


def _nvrtc_problem() -> str | None:
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception as exc:  # ImportError, or no libnvrtc
        return f"NVRTC is not available: {exc}"
    return None


def _compiler_env(simulators: dict[str, str], compiler: str) -> dict[str, str]:
    if compiler == "nvrtc" and (why := _nvrtc_problem()):
        pytest.skip(why)
    if compiler == "nvcc" and shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH")
    return {**simulators, "OFFLOAD_CUDA_COMPILER": compiler}


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_the_example_runs_one_source_on_every_platform(
    simulators: dict[str, str], compiler: str, tmp_path: Path
) -> None:
    env = {**_compiler_env(simulators, compiler), "GPUSIM_KERNELS": str(tmp_path / "registry")}
    example = str(ROOT / "examples" / "build_everywhere.py")
    code = f"""
import contextlib, io
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        runpy.run_path({example!r}, run_name="__main__")
    except SystemExit as exit:
        assert not exit.code, exit.code
emit([out.getvalue(), [d.id for d in offload.devices()], sorted(p.name for p in registry.iterdir())])
"""
    printed, ids, registered = _child(code, env)
    wanted = ["cuda:0", "host:0"] + (["amdgpu:0"] if "OFFLOAD_BACKENDS" not in env else [])
    builderless = [i for i in ids if i.startswith("opencl:")]  # offload-opencl has no build hooks
    assert sorted(ids) == sorted(wanted + builderless)
    lines = printed.splitlines()
    for device_id in wanted:
        assert any(line.startswith(f"{device_id} (") and line.endswith("built from source and correct") for line in lines), printed
    for device_id in builderless:
        assert any(line.startswith(f"{device_id} (") and "skipped: " in line and "build_target" in line for line in lines), printed
    assert printed.splitlines()[-1] == "ok"
    assert len(registered) == len(wanted) - 1  # one host build per GPU image


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_cuda_builds_for_the_device_architecture(simulators: dict[str, str], compiler: str) -> None:
    env = _compiler_env(simulators, compiler)
    result = _child(
        """
src = open(os.environ["SAXPY"]).read()
(device,) = offload.devices("cuda")
image = offload.build(src, device)
target = device.handle.platform.backend.build_target(device.handle.native)
emit([target, image[:4].hex(), len(image), image.count(b".target sm_90")])
""",
        {**env, "SAXPY": str(ROOT / "examples" / "kernels" / "saxpy_portable.c")},
    )
    target, magic, size, ptx = result
    assert target.startswith("sm_90 ") and size > 0
    if compiler == "nvrtc":
        assert magic == "7f454c46" and "nvrtc 13." in target  # an ELF cubin
    else:
        assert magic == "50ed55ba" and ptx == 1  # a fatbin (0xBA55ED50) with the compute_90 PTX


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_cuda_compile_errors_carry_the_log(simulators: dict[str, str], compiler: str) -> None:
    env = _compiler_env(simulators, compiler)
    code, details = _build_error('extern "C" __global__ void k(int *p) { *p = undeclared_thing_42; }', env)
    assert code == "COMPILE_FAILURE" and "undeclared_thing_42" in details, details
    assert ("NVRTC" if compiler == "nvrtc" else "nvcc") in details


def test_missing_cuda_compiler(simulators: dict[str, str], tmp_path: Path) -> None:
    env = {**simulators, "OFFLOAD_CUDA_COMPILER": "nvcc", "OFFLOAD_NVCC": str(tmp_path / "no-nvcc")}
    result = _build_error('extern "C" __global__ void k() {}', env)
    assert result[0] == "HOST_TOOL_NOT_FOUND" and "no-nvcc" in result[1]


def _amdgpu(simulators: dict[str, str]) -> dict[str, str]:
    if "OFFLOAD_BACKENDS" in simulators:
        pytest.skip("clang-19 is not available for AMDGPU builds")
    return simulators


def test_amdgpu_builds_for_the_device_target_and_features(simulators: dict[str, str]) -> None:
    result = _child(
        """
from offload_amdgpu import CodeObject, Target
src = open(os.environ["SAXPY"]).read()
(device,) = offload.devices("amdgpu")
image = offload.build(src, device)
code = CodeObject.parse(image)
emit([str(code.target), sorted(code.kernels)])
""",
        {**_amdgpu(simulators), "SAXPY": str(ROOT / "examples" / "kernels" / "saxpy_portable.c")},
    )
    assert result == ["gfx90a:sramecc+:xnack-", ["saxpy"]]


def test_amdgpu_compile_errors_and_missing_clang(simulators: dict[str, str], tmp_path: Path) -> None:
    source = 'extern "C" __global__ void k(int *p) { *p = undeclared_thing_43; }'
    failed = _build_error(source, _amdgpu(simulators), "amdgpu")
    assert failed[0] == "COMPILE_FAILURE" and "undeclared_thing_43" in failed[1] and "clang" in failed[1]
    missing = _build_error(source, {**simulators, "OFFLOAD_HIP_CLANG": str(tmp_path / "no-clang")}, "amdgpu")
    assert missing[0] == "HOST_TOOL_NOT_FOUND" and "no-clang" in missing[1]


def test_nvrtc_architecture_choice() -> None:
    from offload_cuda._build import nvrtc_architecture

    import offload

    supported = [75, 80, 86, 90, 100, 120, 121]
    assert nvrtc_architecture(90, supported) == "sm_90"
    assert nvrtc_architecture(130, supported) == "compute_121"  # newer than NVRTC: PTX the driver compiles
    assert nvrtc_architecture(89, supported) == "compute_86"
    with pytest.raises(offload.OffloadError) as info:
        nvrtc_architecture(70, supported)
    assert info.value.code is offload.ErrorCode.UNSUPPORTED and "sm_70" in info.value.details


def test_nvrtc_gives_ptx_to_a_device_newer_than_it_knows(simulators: dict[str, str], tmp_path: Path) -> None:
    env = {**_compiler_env(simulators, "nvrtc"), "GPUSIM_CUDA_SM": "130", "GPUSIM_KERNELS": str(tmp_path / "registry")}
    result = _child(
        f"""
import numpy as np
(device,) = offload.devices("cuda")
image = offload.build(open({str(ROOT / "examples" / "kernels" / "saxpy_portable.c")!r}).read(), device)
x = offload.to_device(np.arange(512, dtype=np.float32), device)
y = offload.to_device(np.ones(512, dtype=np.float32), device)
with device.load_program(image) as program, device.queue() as queue:
    queue.launch(program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n"), 2, 256, 2.0, x, y, 512)
emit([image[:200].decode(errors="replace"), image.endswith(b"\\0"), bool((y.to_numpy() == 2 * np.arange(512) + 1).all())])
""",
        env,
    )
    text, terminated, correct = result
    assert ".target sm_" in text or ".version" in text, text
    assert terminated and correct


@pytest.mark.parametrize("platform", ["cuda", "amdgpu"])
def test_the_heat_example_runs_on_the_simulated_gpus(simulators: dict[str, str], platform: str) -> None:
    """examples/heat.py (zeros, slicing, a 2-D launch, checked against numpy inside) on a GPU:
    the views' fills and pitched copies and the 2-D grid as the simulated driver runs them."""
    env = _compiler_env(simulators, "nvrtc") if platform == "cuda" else _amdgpu(simulators)
    example = str(ROOT / "examples" / "heat.py")
    code = f"""
import contextlib, io
out = io.StringIO()
sys.argv = ["heat.py", "{platform}:0"]
with contextlib.redirect_stdout(out):
    runpy.run_path({example!r}, run_name="__main__")
emit(out.getvalue())
"""
    printed = _child(code, env)
    assert printed.splitlines()[0].endswith(f"({platform}:0)") and printed.splitlines()[-1] == "ok", printed
