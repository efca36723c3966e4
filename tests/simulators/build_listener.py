"""The simulators' host builds of programs made by ``offload.build`` (a test fixture, never shipped).

The simulated CUDA and HIP drivers run a kernel image through the host build registered for its
FNV-1a 64 hash in ``GPUSIM_KERNELS`` (see README.md). ``install(registry, work)`` adds an
``offload.add_build_listener`` that, for every cuda / amdgpu image ``offload.build`` hands out,
compiles the same source with the host C++ compiler (``core/gpusim_kernel.h`` in front, and for HIP
``hip/hip_host_prelude.h``; ``OFFLOAD_KERNEL_CUDA_STYLE`` so ``offload_kernel.h`` takes the CUDA
spelling) and registers it under the image's hash, before the image is loaded. Kernel names come
from the code object's metadata (amdgpu) or from the source (cuda: ``__global__ void name(`` and
``OFFLOAD_PORTABLE_KERNEL(name, ...``).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import offload

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # gpusim_hash beside it
    sys.path.insert(0, str(HERE))
from gpusim_hash import fnv1a64  # noqa: E402
KERNEL_SOURCES = HERE.parent / "kernels" / "gpu"
_NAMES = re.compile(r"(?:__global__\s+void\s+|OFFLOAD_PORTABLE_KERNEL\s*\(\s*)([A-Za-z_]\w*)")
_SKIP = frozenset({"amdgcn.device.init", "amdgcn.device.fini"})


def kernel_names(built: offload.BuiltProgram) -> list[str]:
    if built.platform == "amdgpu":
        from offload_amdgpu import CodeObject

        return [n for n in CodeObject.parse(built.image).kernels if n not in _SKIP]
    return sorted(set(_NAMES.findall(built.source)))


def host_build(built: offload.BuiltProgram, out: Path, work: Path) -> None:
    """Compile ``built.source`` into the simulator's host build ``out``."""
    work.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(built.source.encode() + built.platform.encode()).hexdigest()[:16]
    source = work / f"{key}.src"
    source.write_text(built.source)
    lines = [f'#include "{source}"', "GPUSIM_DEFINE_RUNTIME()"]
    lines += [f"GPUSIM_EXPORT_KERNEL({name})" for name in kernel_names(built) if re.fullmatch(r"[A-Za-z_]\w*", name)]
    unit = work / f"{key}.host.cpp"
    unit.write_text("\n".join(lines) + "\n")
    prelude = ["-include", str(HERE / "hip" / "hip_host_prelude.h")] if built.platform == "amdgpu" else []
    cxx = os.environ.get("CXX", "g++")
    tmp = Path(tempfile.mkstemp(dir=out.parent, prefix=".host-", suffix=".so")[1])
    command = [cxx, "-std=c++17", "-O1", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-DGPUSIM_HOST_BUILD",
               "-DOFFLOAD_KERNEL_CUDA_STYLE", "-include", str(HERE / "core" / "gpusim_kernel.h"), *prelude,
               f"-I{offload.kernel_include_dir()}", f"-I{KERNEL_SOURCES}", str(unit), "-o", str(tmp)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"the simulator's host build failed:\n{result.stderr}")
    tmp.rename(out)


def install(registry: Path, work: Path) -> Callable[[], None]:
    """Register host builds of every GPU image ``offload.build`` returns; returns the remover."""
    registry.mkdir(parents=True, exist_ok=True)

    def on_built(built: offload.BuiltProgram) -> None:
        if built.platform not in ("cuda", "amdgpu"):
            return
        image = built.image
        if built.platform == "cuda" and not image.startswith((b"\x7fELF", b"\x50\xed\x55\xba")) and b"\0" in image:
            image = image[: image.index(b"\0")]  # PTX text: the simulator hashes it up to its NUL
        entry = registry / f"{fnv1a64(image):016x}.so"
        if not entry.exists():
            host_build(built, entry, work)

    return offload.add_build_listener(on_built)
