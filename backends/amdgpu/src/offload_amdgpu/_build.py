"""Programs from HIP source (the ``build_target`` / ``build_source`` hooks): clang in HIP mode,
device code only, one code object for the device's gfx target with its sramecc / xnack settings
(``--offload-arch=gfx90a:sramecc+:xnack-``), which ``load_binary`` checks the same way.

The compiler: ``$OFFLOAD_HIP_CLANG``, else ROCm's ``llvm/bin/clang++`` (ROCm: ``$ROCM_PATH``, else
``/opt/rocm``, when it holds ``include/hip/hip_runtime.h``), else ``clang++-19`` or ``clang++`` on
PATH. With ROCm, clang uses its HIP headers and device libraries; without, the source is compiled
with ``-nogpuinc -nogpulib`` (what ``offload_kernel.h`` needs is built into clang). The options go to
clang as given; ``offload_kernel.h`` is on the include path.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

from offload.backend.build import compile_source, find_tool, kernel_include_dir, tool_version

from ._device import HipDevice

__all__ = ["build_source", "build_target"]

CLANG_ENV = "OFFLOAD_HIP_CLANG"


def _rocm() -> pathlib.Path | None:
    for candidate in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if candidate and (pathlib.Path(candidate) / "include" / "hip" / "hip_runtime.h").is_file():
            return pathlib.Path(candidate)
    return None


def _clang(rocm: pathlib.Path | None) -> list[str]:
    names = ([str(rocm / "llvm" / "bin" / "clang++")] if rocm else []) + ["clang++-19", "clang++"]
    return find_tool(names, env=CLANG_ENV, what="HIP compiler (clang)")


def build_target(device: HipDevice) -> str:
    """The gfx target with its features, the compiler with its version and the ROCm it uses."""
    rocm = _rocm()
    return f"{device.target} {tool_version(_clang(rocm))} rocm={rocm}"


def build_source(device: HipDevice, source: str, options: Sequence[str]) -> bytes:
    """One amdgcn code object of ``source`` for the device's target."""
    rocm = _rocm()
    clang = _clang(rocm)
    target = str(device.target)
    libs = [f"--rocm-path={rocm}"] if rocm else ["-nogpuinc", "-nogpulib"]
    return compile_source(
        source,
        ".hip",
        lambda src, out: [*clang, "-x", "hip", "--cuda-device-only", f"--offload-arch={target}", *libs, "-O3",
                          "--no-gpu-bundle-output", f"-I{kernel_include_dir()}", *options, "-o", out, src],  # fmt: skip
        f"clang for {target}",
    )
