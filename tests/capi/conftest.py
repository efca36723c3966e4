"""Fixtures of the C ABI tests: offload-capi's library and header, C/C++ compilers, Debian's
liboffload 22 (library, ``OffloadAPI.h`` and ``llvm-offload-device-info``, unpacked without
installing), and programs built from tests/capi/programs. What cannot be had skips, saying why."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from helpers import child_environ

PROGRAMS = pathlib.Path(__file__).resolve().parent / "programs"
DEBIAN_PACKAGES = ("liboffload-22", "libllvm22", "liboffload-22-dev")


@dataclass(frozen=True)
class Capi:
    libdir: pathlib.Path
    includedir: pathlib.Path

    def env(self, **extra: str) -> dict[str, str]:
        """A child's environment running against offload's library (OFFLOAD_* of this run stripped)."""
        env = child_environ("OFFLOAD_")
        if "OFFLOAD_COMPILED" in os.environ:  # the run's path (compiled or not) reaches the embedded runtime
            env["OFFLOAD_COMPILED"] = os.environ["OFFLOAD_COMPILED"]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(self.libdir), extra.pop("LD_LIBRARY_PATH", "")]))
        env.update(extra)
        return env


@dataclass(frozen=True)
class Debian:
    libdir: pathlib.Path  # libLLVMOffload.so.22.1 and libLLVM.so.22.1
    includedir: pathlib.Path  # offload/OffloadAPI.h
    device_info: pathlib.Path  # llvm-offload-device-info


@pytest.fixture(scope="session")
def capi() -> Capi:
    """offload-capi as installed in this venv, through its documented command."""
    proc = subprocess.run([sys.executable, "-m", "offload_capi", "--libdir"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"offload-capi is not installed in this venv (scripts/test.sh installs ./capi): {proc.stderr.strip()[-300:]}")
    inc = subprocess.run([sys.executable, "-m", "offload_capi", "--includedir"], capture_output=True, text=True, check=True)
    return Capi(pathlib.Path(proc.stdout.strip()), pathlib.Path(inc.stdout.strip()))


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"no {name} on this machine")
    return found


@pytest.fixture(scope="session")
def debian() -> Debian:
    """Debian's liboffload 22 (bookworm-security), unpacked into the per-user cache."""
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "offload-tests" / "liboffload-22"
    found = Debian(cache / "usr/lib/x86_64-linux-gnu", cache / "usr/lib/llvm-22/include",
                   cache / "usr/lib/llvm-22/bin/llvm-offload-device-info")
    ready = lambda: ((found.libdir / "libLLVMOffload.so.22.1").is_file() and (found.libdir / "libLLVM.so.22.1").exists()
                     and (found.includedir / "offload/OffloadAPI.h").is_file() and found.device_info.is_file())
    if ready():
        return found
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        pytest.skip("liboffload-22 cannot be had: no apt-get/dpkg on this machine")
    with tempfile.TemporaryDirectory() as download:
        get = lambda: subprocess.run(["apt-get", "download", *DEBIAN_PACKAGES], cwd=download, capture_output=True, text=True, timeout=300)
        proc = get()
        if proc.returncode != 0 and os.geteuid() == 0:  # a fresh machine may have no package lists yet
            subprocess.run(["apt-get", "update"], capture_output=True, timeout=300)
            proc = get()
        debs = sorted(pathlib.Path(download).glob("*.deb"))
        if proc.returncode != 0 or len(debs) != len(DEBIAN_PACKAGES):
            pytest.skip(f"liboffload-22 cannot be had: apt-get download failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
        cache.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(cache)], check=True, timeout=300)
    if not ready():
        pytest.skip(f"liboffload-22 unpacked into {cache}, but its library, header or tool is missing")
    return found


@pytest.fixture(scope="session")
def build_program(capi: Capi, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., pathlib.Path]:
    """``build_program(source_name, *flags, include=None)``: compile tests/capi/programs/<source>
    (C with gcc, C++ with g++) against the packaged OffloadAPI.h (or ``include``), linked with -lLLVMOffload
    from offload-capi's libdir (the SONAME is liboffload's, so either library serves it at run time)."""
    out = tmp_path_factory.mktemp("capi-programs")

    def build(source: str, *flags: str, include: pathlib.Path | None = None, link: bool = True) -> pathlib.Path:
        path = PROGRAMS / source
        compiler = _tool("g++" if path.suffix == ".cpp" else "gcc")
        target = out / f"{path.stem}{abs(hash(flags))}"
        cmd = [compiler, "-O1", "-g", "-Wall", f"-I{include or capi.includedir}", str(path), "-o", str(target), *flags]
        if link:
            cmd += [f"-L{capi.libdir}", "-lLLVMOffload"]
        cmd += ["-lpthread", "-ldl"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-3000:]}"
        return target

    return build


def run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a built program in a child (it may crash: that fails one test)."""
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def _load_simulator_build():
    path = pathlib.Path(__file__).resolve().parents[1] / "simulators" / "build.py"
    spec = importlib.util.spec_from_file_location("gpusim_build", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get("gpusim_build") or importlib.util.module_from_spec(spec)
    if "gpusim_build" not in sys.modules:
        sys.modules["gpusim_build"] = module
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def simulated_cuda() -> pathlib.Path:
    """The folder of the project's simulated CUDA driver (tests/simulators/build.py), for LD_LIBRARY_PATH."""
    if importlib.util.find_spec("offload_cuda") is None:
        pytest.skip("offload-cuda is not installed in this venv")
    build = _load_simulator_build()
    try:
        return pathlib.Path(build.cuda_driver())
    except build.BuildError as exc:
        pytest.fail(f"the simulated CUDA driver does not build: {exc}")
