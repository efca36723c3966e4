"""Programs from CUDA C++ source (the ``build_target`` / ``build_source`` hooks): NVRTC through
cuda.bindings when its library loads (a CUDA toolkit, or the ``nvidia-cuda-nvrtc`` wheel), else
nvcc (``$OFFLOAD_NVCC``, else ``nvcc`` on PATH, else ``$CUDA_HOME/bin/nvcc``).

- NVRTC: a cubin for the device's compute capability (``--gpu-architecture=sm_XY``); for a device
  newer than this NVRTC knows, the PTX of the newest architecture it does (``compute_XY``), which
  the device's driver compiles for itself;
- nvcc: a fatbin holding that cubin and the PTX of ``compute_XY`` (which a newer device's driver
  compiles for itself).

``OFFLOAD_CUDA_COMPILER=nvrtc|nvcc`` chooses instead of the order above. ``offload_kernel.h`` is on
the include path; the options go to the compiler as given.
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Sequence
from typing import Any

from offload import ErrorCode, OffloadError
from offload.backend.build import compile_failure, compile_source, find_tool, kernel_include_dir, tool_version

from ._device import CudaDevice

__all__ = ["build_source", "build_target"]

COMPILER_ENV = "OFFLOAD_CUDA_COMPILER"
_NVRTC_SUCCESS = 0
_lock = threading.Lock()
_nvrtc_state: list[Any] = []  # [module or None, version text or why not]


def _nvrtc() -> tuple[Any, str]:
    """``(cuda.bindings.nvrtc, "nvrtc X.Y")`` when NVRTC's library loads, else ``(None, why)``."""
    with _lock:
        if not _nvrtc_state:
            try:
                from cuda.bindings import nvrtc

                result, major, minor = nvrtc.nvrtcVersion()
                if int(result) != _NVRTC_SUCCESS:
                    raise RuntimeError(f"nvrtcVersion returned {result}")
                _nvrtc_state[:] = [nvrtc, f"nvrtc {major}.{minor}"]
            except Exception as exc:  # ImportError, or cuda.pathfinder's library-not-found
                _nvrtc_state[:] = [None, f"NVRTC is not available ({type(exc).__name__}: {exc})"]
        return _nvrtc_state[0], _nvrtc_state[1]


def _nvcc() -> list[str]:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    names = ["nvcc"] + ([str(pathlib.Path(home) / "bin" / "nvcc")] if home else [])
    return find_tool(names, env="OFFLOAD_NVCC", what="CUDA compiler (nvcc)")


def _compiler() -> str:
    """"nvrtc" or "nvcc", by ``$OFFLOAD_CUDA_COMPILER`` or what is there."""
    wanted = os.environ.get(COMPILER_ENV, "").strip().lower()
    if wanted not in ("", "nvrtc", "nvcc"):
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"${COMPILER_ENV}={wanted!r}: want nvrtc or nvcc")
    if wanted == "nvcc":
        return "nvcc"
    module, why = _nvrtc()
    if module is not None:
        return "nvrtc"
    if wanted == "nvrtc":
        raise OffloadError(ErrorCode.HOST_TOOL_NOT_FOUND, f"${COMPILER_ENV}=nvrtc but {why}")
    return "nvcc"


def build_target(device: CudaDevice) -> str:
    """``sm_XY`` and the compiler with its version (``nvrtc X.Y``, or nvcc's path and version)."""
    compiler = _compiler()
    tool = _nvrtc()[1] if compiler == "nvrtc" else tool_version(_nvcc())
    return f"sm_{device.sm} {tool}"


def build_source(device: CudaDevice, source: str, options: Sequence[str]) -> bytes:
    """A cubin (NVRTC) or a cubin + PTX fatbin (nvcc) of ``source`` for ``device``."""
    if _compiler() == "nvrtc":
        return _with_nvrtc(device.sm, source, options)
    sm = device.sm
    nvcc = _nvcc()
    return compile_source(
        source,
        ".cu",
        lambda src, out: [*nvcc, "-fatbin", "--no-compress", f"-gencode=arch=compute_{sm},code=sm_{sm}",
                          f"-gencode=arch=compute_{sm},code=compute_{sm}", f"-I{kernel_include_dir()}", *options,
                          "-o", out, src],  # fmt: skip
        f"nvcc for sm_{sm}",
    )


def _check(nvrtc: Any, returned: Any, call: str) -> Any:
    result, *values = returned if isinstance(returned, tuple) else (returned,)
    if int(result) != _NVRTC_SUCCESS:
        _, name = nvrtc.nvrtcGetErrorString(result)
        raise OffloadError(ErrorCode.COMPILE_FAILURE, f"{call} failed: {bytes(name).decode(errors='replace')}")
    return values[0] if len(values) == 1 else values


def nvrtc_architecture(sm: int, supported: Sequence[int]) -> str:
    """What NVRTC compiles for a device of ``sm``: ``sm_XY`` when NVRTC supports it, else (a newer
    device) ``compute_XY`` of the newest supported architecture of the same major, or of any
    older major (PTX runs on later devices); UNSUPPORTED for a device older than all of them."""
    if sm in supported:
        return f"sm_{sm}"
    older = [arch for arch in supported if arch < sm]
    if not older:
        raise OffloadError(ErrorCode.UNSUPPORTED, f"NVRTC supports {sorted(supported)}, nothing for sm_{sm}")
    return f"compute_{max(older)}"


def _with_nvrtc(sm: int, source: str, options: Sequence[str]) -> bytes:
    nvrtc = _nvrtc()[0]
    arch = nvrtc_architecture(sm, [int(a) for a in _check(nvrtc, nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")])
    program = _check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []), "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}", f"-I{kernel_include_dir()}", *options]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(opts), [o.encode() for o in opts])
        if int(result) != _NVRTC_SUCCESS:
            size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
            log = b" " * int(size)
            _check(nvrtc, nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            raise compile_failure(f"NVRTC for {arch} ({' '.join(opts)})", log.rstrip(b"\0").decode(errors="replace"))
        if arch.startswith("compute_"):  # PTX text, NUL-terminated as cuModuleLoadData takes it
            size = _check(nvrtc, nvrtc.nvrtcGetPTXSize(program), "nvrtcGetPTXSize")
            ptx = b" " * int(size)
            _check(nvrtc, nvrtc.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            return ptx
        size = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
        cubin = b" " * int(size)
        _check(nvrtc, nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)
