"""Builds the simulated GPU drivers and the GPU test kernels (cached; for tests and benchmarks).

Everything lands under ``tests/.build/`` (git-ignored), keyed by a hash of its inputs, so one
CI run builds each thing once and later runs reuse it:

- ``cuda_driver()``: the simulated CUDA driver, a directory holding ``libcuda.so.1`` (cc);
- ``nvcc()``: nvcc 13.0 from PATH, else ``nvidia-cuda-nvcc==13.0.*`` (and its 13.0 companions)
  installed from PyPI into the build directory; ``None`` with a reason when neither works;
- ``gpu_kernels()``: every ``tests/kernels/gpu/*.cu`` compiled to sm_90 cubin, PTX (ISA 9.0) and
  an uncompressed fatbin (sm_90 SASS + compute_90 PTX; another SM with ``OFFLOAD_CUDA_ARCH``), ``foo`` also to sm_80 cubin and a
  fatbin with compressed entries (-Xfatbin -compress-all; the simulator does not decompress), and each
  source compiled with the host C++ compiler into a host build that the simulator runs; the
  registry directory maps every image's FNV-1a 64 hash to its host build
  (``GPUSIM_KERNELS``, see tests/simulators/README.md).

``simulator_env(...)`` gives the environment of a child process that uses the simulator.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIMULATORS = Path(__file__).resolve().parent
if str(SIMULATORS) not in sys.path:  # gpusim_hash beside it (this module is often loaded by its path)
    sys.path.insert(0, str(SIMULATORS))
from gpusim_hash import fnv1a64  # noqa: E402
KERNEL_SOURCES = ROOT / "tests" / "kernels" / "gpu"
BUILD = Path(os.environ.get("OFFLOAD_TEST_BUILD_DIR", ROOT / "tests" / ".build"))

#: The test programs of the conformance kit plus saxpy.
GPU_KERNELS = (
    "foo", "bar", "noargs", "byte", "multiargs", "localmem", "localmem_reduction", "localmem_static",
    "global", "global_ctor", "global_dtor", "sequence", "single_counter", "saxpy",
)  # fmt: skip

HOST_BUILDS_MARKER = "host-builds-registered"

NVCC_PINS = (
    "nvidia-cuda-nvcc==13.0.*",
    "nvidia-cuda-runtime==13.0.*",
    "nvidia-cuda-crt==13.0.*",
    "nvidia-nvvm==13.0.*",
)


class BuildError(RuntimeError):
    """A toolchain is present but a build failed (a broken build must fail, not skip)."""


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _run(cmd: list[str], **kwargs: object) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


def _cc() -> str:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


def _cxx() -> str:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"


def cxx_problem() -> str | None:
    """None when a C++ compiler (for host builds of kernels) is there, installing g++ with
    apt-get where this process may (root); else why there is none."""
    if os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++"):
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "no C++ compiler (c++/g++), and apt-get install g++ is not possible here (not root or no apt-get)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "g++"]
    if subprocess.run(install, capture_output=True, env=env, timeout=900).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=900)
        proc = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode != 0:
            return f"no C++ compiler, and apt-get install g++ failed: {proc.stderr.strip()[-300:]}"
    return None if shutil.which("c++") or shutil.which("g++") else "apt-get installed g++ but no c++/g++ is on PATH"


def _publish(tmp: Path, final: Path) -> Path:
    """Atomically moves a finished build directory into place (a concurrent twin may win), and
    removes older builds of the same kind (``<kind>-<key>`` siblings)."""
    try:
        tmp.rename(final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    kind = final.name.rsplit("-", 1)[0]
    if final.parent == BUILD and kind != final.name:
        for old in BUILD.glob(f"{kind}-*"):
            if old != final and old.name.rsplit("-", 1)[0] == kind:
                shutil.rmtree(old, ignore_errors=True)
    return final


# --- the simulated CUDA driver -------------------------------------------------------------------


def cuda_driver() -> Path:
    """The directory holding the simulated ``libcuda.so.1`` (built with cc on first use)."""
    sources = sorted((SIMULATORS / "core").glob("*.[ch]")) + sorted((SIMULATORS / "cuda").glob("*.[ch]"))
    key = _digest(_cc(), *(p.read_bytes() for p in sources))
    final = BUILD / f"simcuda-{key}"
    if (final / "libcuda.so.1").exists():
        return final
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=BUILD, prefix=".simcuda-"))
    c_files = [str(p) for p in sources if p.suffix == ".c"]
    _run([_cc(), "-O2", "-g", "-std=c11", "-Wall", "-Wextra", "-fPIC", "-shared", "-fvisibility=hidden",
          "-Wl,-soname,libcuda.so.1", "-o", str(tmp / "libcuda.so.1"), *c_files, "-lpthread", "-ldl"])  # fmt: skip
    return _publish(tmp, final)


# --- nvcc ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Nvcc:
    path: str
    version: str


def _nvcc_version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"release (\d+\.\d+)", out)
    return found.group(1) if found else None


_nvcc_cache: list[Nvcc | str] = []


def nvcc() -> Nvcc | str:
    """nvcc 13.0 (PATH first, else pip-installed into the build dir); a str is the reason none."""
    if _nvcc_cache:
        return _nvcc_cache[0]
    result: Nvcc | str
    on_path = shutil.which("nvcc")
    if on_path and _nvcc_version(on_path) == "13.0":
        result = Nvcc(on_path, "13.0")
    else:
        target = BUILD / "nvcc-13.0"
        candidate = target / "nvidia" / "cu13" / "bin" / "nvcc"
        if not candidate.exists():
            BUILD.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=BUILD, prefix=".nvcc-"))
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(tmp), *NVCC_PINS],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            if proc.returncode == 0:
                _publish(tmp, target)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
        if candidate.exists() and _nvcc_version(str(candidate)) == "13.0":
            result = Nvcc(str(candidate), "13.0")
        else:
            why = f"nvcc on PATH is {_nvcc_version(on_path)}" if on_path else "no nvcc on PATH"
            result = f"{why}, and installing {' '.join(NVCC_PINS)} from PyPI failed"
    _nvcc_cache.append(result)
    return result


# --- GPU test kernels ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuKernels:
    """Built images per kernel source; ``registry`` is the ``GPUSIM_KERNELS`` directory."""

    root: Path
    registry: Path

    def image(self, name: str, fmt: str = "cubin") -> Path:
        """``fmt``: ``cubin`` (sm_90), ``ptx``, ``fatbin`` (uncompressed); for foo also
        ``sm80.cubin`` and ``compressed.fatbin``."""
        return self.root / f"{name}.{fmt}"

    def programs_dir(self, fmt: str = "cubin") -> Path:
        """A directory of ``<name>.bin`` for every kernel, the given format (for the kit)."""
        out = self.root / f"programs-{fmt}"
        if not out.exists():
            tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=".programs-"))
            for name in GPU_KERNELS:
                data = self.image(name, fmt).read_bytes()
                (tmp / f"{name}.bin").write_bytes(data + b"\0" if fmt == "ptx" else data)
            _publish(tmp, out)
        return out


_KERNEL_RE = re.compile(r"__global__\s+void\s+([A-Za-z_$][\w$]*)\s*\(")


def _host_build(source: Path, out: Path) -> None:
    names = _KERNEL_RE.findall(source.read_text())
    unit = out.with_suffix(".host.cpp")
    lines = [f'#include "{source}"', "GPUSIM_DEFINE_RUNTIME()"] + [f"GPUSIM_EXPORT_KERNEL({n})" for n in names]
    unit.write_text("\n".join(lines) + "\n")
    _run([_cxx(), "-std=c++17", "-O1", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-DGPUSIM_HOST_BUILD", "-include",
          str(SIMULATORS / "core" / "gpusim_kernel.h"), "-I", str(KERNEL_SOURCES), "-o", str(out), str(unit)])  # fmt: skip


def cuda_arch() -> str:
    """The SM number the test kernels' cubin, PTX and fatbin are built for: ``OFFLOAD_CUDA_ARCH``
    (2-3 digits; scripts/cuda-real.sh sets the device's own), default 90 (the simulator's)."""
    value = os.environ.get("OFFLOAD_CUDA_ARCH", "90")
    if not re.fullmatch(r"\d{2,3}", value):
        raise BuildError(f"OFFLOAD_CUDA_ARCH={value!r}: want an SM number such as 80, 90 or 100")
    return value


def _gpu_builds(tool: Nvcc, source: Path, out_dir: Path) -> list[Path]:
    name = source.stem
    base = [tool.path, "-I", str(KERNEL_SOURCES)]
    sm = cuda_arch()
    outputs = [out_dir / f"{name}.cubin", out_dir / f"{name}.ptx", out_dir / f"{name}.fatbin"]
    _run([*base, "-cubin", f"-arch=sm_{sm}", str(source), "-o", str(outputs[0])])
    _run([*base, "-ptx", f"-arch=sm_{sm}", str(source), "-o", str(outputs[1])])
    _run([*base, "-fatbin", "--no-compress", "-gencode", f"arch=compute_{sm},code=sm_{sm}",
          "-gencode", f"arch=compute_{sm},code=compute_{sm}", str(source), "-o", str(outputs[2])])  # fmt: skip
    if name == "foo":
        outputs.append(out_dir / "foo.sm80.cubin")
        _run([*base, "-cubin", "-arch=sm_80", str(source), "-o", str(outputs[-1])])
        outputs.append(out_dir / "foo.compressed.fatbin")  # compressed entries (nvcc compresses larger ones by default)
        _run(
            [
                *base,
                "-fatbin",
                "-Xfatbin",
                "-compress-all",
                "-gencode",
                "arch=compute_90,code=sm_90",
                str(source),
                "-o",
                str(outputs[-1]),
            ]
        )
    return outputs


def gpu_kernels(host_builds: bool = True) -> GpuKernels | str:
    """Builds (or finds) every GPU test kernel; a str is the reason it cannot (no nvcc, or no
    C++ compiler for the host builds)."""
    tool = nvcc()
    if isinstance(tool, str):
        return tool
    if host_builds and (problem := cxx_problem()) is not None:
        return problem
    sources = sorted(KERNEL_SOURCES.glob("*.cu"))
    headers = sorted(KERNEL_SOURCES.glob("*.h")) + [SIMULATORS / "core" / "gpusim_kernel.h"]
    key = _digest(
        tool.path, tool.version, _cxx(), cuda_arch(), Path(__file__).read_bytes(), *(p.read_bytes() for p in sources + headers)
    )
    final = BUILD / f"gpu-kernels-{key}"
    # A build without host builds (a real-GPU run) must not stand in for one the simulator needs:
    # the marker says the registry is complete; a build lacking it is replaced when they are needed.
    if (final / "registry").exists() and (not host_builds or (final / HOST_BUILDS_MARKER).exists()):
        return GpuKernels(final, final / "registry")
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=BUILD, prefix=".gpu-kernels-"))
    registry = tmp / "registry"
    registry.mkdir()

    def one(source: Path) -> None:
        images = _gpu_builds(tool, source, tmp)
        if not host_builds:
            return
        host = tmp / f"{source.stem}.host.so"
        _host_build(source, host)
        for image in images:
            data = image.read_bytes()
            (registry / f"{fnv1a64(data):016x}.so").symlink_to(os.path.relpath(host, registry))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        for future in [pool.submit(one, s) for s in sources]:
            future.result()
    if host_builds:
        (tmp / HOST_BUILDS_MARKER).touch()
        if final.exists():  # an earlier build without host builds
            shutil.rmtree(final, ignore_errors=True)
    _publish(tmp, final)
    return GpuKernels(final, final / "registry")


def simulator_env(
    driver: Path, kernels: GpuKernels | None, devices: int = 1, delay_us: int = 0, base: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment of a child process that runs against the simulated CUDA driver."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(driver), env.get("LD_LIBRARY_PATH", "")]))
    env["GPUSIM_DEVICES"] = str(devices)
    env["GPUSIM_DELAY_US"] = str(delay_us)
    if kernels is not None:
        env["GPUSIM_KERNELS"] = str(kernels.registry)
    return env
