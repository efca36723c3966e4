"""Builds the HIP simulator and the AMDGPU test programs (a test fixture; never shipped).

* ``build_runtime(out)``: ``out/libamdhip64.so`` = the HIP front + the simulator core (gcc).
* ``clang_toolchain()``: Debian's clang-19 / lld-19 (installed with apt-get where this process
  may: root with apt), or a ``Skip`` reason; ``bundler()`` says whether clang-offload-bundler
  (clang-tools-19) is there for offload bundles.
* ``build_code_object(source, target, out)``: one ``.cu`` source -> an amdgcn code object
  (clang++-19 -x hip --cuda-device-only, hip_device_prelude.h force-included).
* ``build_host(source, code_object, registry)``: the host build of the same source, with one
  ``gpusim_kernel_<name>`` per kernel of the code object's NT_AMDGPU_METADATA, registered in the
  simulator core's registry under the code object's FNV-1a 64 hash.
* ``unpack_real_hip(out)``: Debian's real HIP runtime (libamdhip64-5 with its HSA libraries),
  ``apt-get download`` + ``dpkg -x`` into ``out``, nothing installed system-wide.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # gpusim_hash, shared with ../build.py
    sys.path.insert(0, str(HERE.parent))
from gpusim_hash import fnv1a64  # noqa: E402  (hipsim.fnv1a64: the registry key of host builds)
CORE = HERE.parent / "core"
KERNELS = HERE.parent.parent / "kernels" / "gpu"
CLANG = "clang++-19"
APT_PACKAGES = ("clang-19", "lld-19", "clang-tools-19")  # clang-tools-19 has clang-offload-bundler
REAL_HIP_PACKAGES = ("libamdhip64-5", "libhsa-runtime64-1", "libhsakmt1")

#: The gfx target the simulator is (its default GPUSIM_HIP_TARGET) and a second one for the
#: architecture checks.
SIM_TARGET = "gfx90a"
OTHER_TARGET = "gfx1030"


class Unavailable(Exception):
    """A tool cannot be had on this machine; the message is the skip reason."""


def _run(cmd: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]


def _sources_digest(paths: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_runtime(out: Path) -> Path:
    """``out/libamdhip64.so`` (rebuilt only when a source changed)."""
    sources = [HERE / "hip_front.c", HERE / "amdgpu_image.c", HERE / "host_alias.c", CORE / "simcore.c"]
    headers = [HERE / "amdgpu_image.h", HERE / "hip_device_prop.h", HERE / "host_alias.h", CORE / "simcore.h", CORE / "gpusim_kernel.h"]
    out.mkdir(parents=True, exist_ok=True)
    lib = out / "libamdhip64.so"
    stamp = out / "libamdhip64.stamp"
    digest = _sources_digest(sources + headers)
    if lib.exists() and stamp.exists() and stamp.read_text() == digest:
        return lib
    cc = os.environ.get("CC", "gcc")
    result = _run(
        [cc, "-O2", "-g", "-std=c11", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra",
         *map(str, sources), "-o", str(lib), "-lpthread", "-ldl"]
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"building the HIP simulator failed:\n{result.stderr}")
    stamp.write_text(digest)
    return lib


def _apt_install(packages: Sequence[str]) -> str | None:
    """apt-get install ``packages``; None on success, else why not."""
    if os.geteuid() != 0:
        return "not root, so apt-get install is not possible"
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    result = _run(install, env=env, timeout=600)
    if result.returncode != 0:  # the package lists may be missing or stale
        _run(["apt-get", "update", "-q"], env=env, timeout=600)
        result = _run(install, env=env, timeout=600)
    if result.returncode != 0:
        return f"apt-get install {' '.join(packages)} failed: {result.stderr.strip()[-400:]}"
    return None


def clang_toolchain() -> str:
    """The clang++-19 command, installing clang-19 / lld-19 / clang-tools-19 with apt where possible."""
    if shutil.which(CLANG) is None or shutil.which("ld.lld-19") is None or not bundler():
        problem = _apt_install(APT_PACKAGES)
        if problem and (shutil.which(CLANG) is None or shutil.which("ld.lld-19") is None):
            raise Unavailable(f"clang-19 / lld-19 are not installed and cannot be: {problem}")
    return CLANG


def bundler() -> bool:
    """Whether clang-offload-bundler (clang-tools-19) is installed, for offload bundles."""
    return (
        shutil.which("clang-offload-bundler-19") is not None
        or Path("/usr/lib/llvm-19/bin/clang-offload-bundler").exists()
    )


def _clang_args(targets: Sequence[str]) -> list[str]:
    arches = [f"--offload-arch={t}" for t in targets]
    return [CLANG, "-x", "hip", "--cuda-device-only", *arches, "-nogpulib", "-nogpuinc", "-O2", "-std=c++17",
            "-include", str(HERE / "hip_device_prelude.h"), f"-I{KERNELS}"]  # fmt: skip


def build_code_object(source: Path, target: str, out: Path) -> Path:
    """One code object of ``source`` for ``target`` (e.g. ``gfx90a``, ``gfx90a:xnack+``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    result = _run([*_clang_args([target]), "--no-gpu-bundle-output", str(source), "-o", str(out)])
    if result.returncode != 0:
        raise RuntimeError(f"clang-19 failed on {source.name} for {target}:\n{result.stderr}")
    return out


def build_bundle(source: Path, targets: Sequence[str], out: Path) -> Path:
    """A clang offload bundle of ``source`` with one code object per target."""
    out.parent.mkdir(parents=True, exist_ok=True)
    result = _run([*_clang_args(targets), str(source), "-o", str(out)])
    if result.returncode != 0:
        raise RuntimeError(f"clang-19 failed to bundle {source.name}:\n{result.stderr}")
    return out


def kernel_names(code_object: bytes) -> list[str]:
    """The kernels of a code object (its NT_AMDGPU_METADATA), through the backend's own reader."""
    from offload_amdgpu import CodeObject

    return list(CodeObject.parse(code_object).kernels)


_HOST_KERNEL_SKIP = frozenset({"amdgcn.device.init", "amdgcn.device.fini"})  # see hip_host_prelude.h


def build_host(source: Path, code_object: bytes, registry: Path, work: Path) -> Path:
    """The host build of ``source`` registered for ``code_object``; returns the registry entry."""
    registry.mkdir(parents=True, exist_ok=True)
    entry = registry / f"{fnv1a64(code_object):016x}.so"
    names = [n for n in kernel_names(code_object) if n not in _HOST_KERNEL_SKIP]
    work.mkdir(parents=True, exist_ok=True)
    host_so = work / f"{source.stem}.host.so"
    if not host_so.exists():
        wrapper = work / f"{source.stem}.host.cpp"
        lines = [f'#include "{source}"', "GPUSIM_DEFINE_RUNTIME()"]
        lines += [f"GPUSIM_EXPORT_KERNEL({name})" for name in names if re.fullmatch(r"[A-Za-z_]\w*", name)]
        wrapper.write_text("\n".join(lines) + "\n")
        cxx = os.environ.get("CXX", "g++")
        result = _run(
            # -Bsymbolic: a kernel named like a libc function (global.cu's read / write) must bind
            # to itself, not to libc, which comes first in the global lookup scope.
            [cxx, "-std=c++17", "-O1", "-g", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-DGPUSIM_HOST_BUILD", "-include",
             str(CORE / "gpusim_kernel.h"), "-include", str(HERE / "hip_host_prelude.h"), f"-I{KERNELS}",
             str(wrapper), "-o", str(host_so)]
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"the host build of {source.name} failed:\n{result.stderr}")
    shutil.copyfile(host_so, entry)
    return entry


def unpack_real_hip(out: Path) -> Path:
    """Debian's HIP 5.2 runtime unpacked into ``out``; returns its library folder."""
    libdir = out / "root" / "usr" / "lib" / "x86_64-linux-gnu"
    if (libdir / "libamdhip64.so").exists():
        return libdir
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise Unavailable("apt-get / dpkg are not available to fetch Debian's libamdhip64-5")
    debs = out / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    download = ["apt-get", "download", *REAL_HIP_PACKAGES]
    result = _run(download, cwd=debs, timeout=600)
    if result.returncode != 0 and os.geteuid() == 0:
        _run(["apt-get", "update", "-q"], timeout=600)
        result = _run(download, cwd=debs, timeout=600)
    if result.returncode != 0:
        raise Unavailable(f"apt-get download {' '.join(REAL_HIP_PACKAGES)} failed: {result.stderr.strip()[-400:]}")
    for deb in sorted(debs.glob("*.deb")):
        unpacked = _run(["dpkg", "-x", str(deb), str(out / "root")])
        if unpacked.returncode != 0:
            raise RuntimeError(f"dpkg -x {deb.name} failed: {unpacked.stderr}")
    target = next(iter(sorted(libdir.glob("libamdhip64.so.5*"))), None)
    if target is None:
        raise RuntimeError(f"libamdhip64-5 unpacked without libamdhip64.so.5 in {libdir}")
    (libdir / "libamdhip64.so").symlink_to("libamdhip64.so.5")
    return libdir
