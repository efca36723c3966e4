"""Builds the optional native entry points (``_native``: without a C compiler the backend serves
through its Python hooks alone), and pins offload-core to the shared VERSION (everything else
lives in pyproject.toml)."""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
VERSION = (HERE / "VERSION").read_text().strip()



def _checkout_install() -> bool:
    """Whether pip is installing this folder of a checkout (pip sets ``PIP_BUILD_TRACKER``, older pips
    ``PIP_REQ_TRACKER``, while it builds): only then are our other distributions required as file
    URLs of their folders. An sdist, any other front end (``python -m build``, whose wheels are
    built from the sdist or pinned the same) and ``OFFLOAD_PIN_REQUIREMENTS=1`` pin ``==VERSION``,
    so nothing meant for an index carries a file URL."""
    if os.environ.get("OFFLOAD_PIN_REQUIREMENTS") == "1" or "sdist" in sys.argv:
        return False
    return "PIP_BUILD_TRACKER" in os.environ or "PIP_REQ_TRACKER" in os.environ

def requirement(name: str, folder: str) -> str:
    """``name==VERSION``; from a checkout (the folder exists, OFFLOAD_PIN_REQUIREMENTS unset) the
    folder itself, so ``pip install ./backends/amdgpu`` works before anything is published."""
    path = (HERE / folder).resolve()
    if _checkout_install() and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.as_uri()}"
    return f"{name}=={VERSION}"

#: The native entry points, on the bindings' C API (no Cython needed). ``native_include`` links to
#: the core's headers (an sdist carries copies); ``optional``: a failed build leaves the Python hooks.
INCLUDE = "src/offload_amdgpu/native_include"
NATIVE = Extension("offload_amdgpu._native", ["src/offload_amdgpu/_native.c"], include_dirs=[INCLUDE], optional=True,
                   depends=[f"{INCLUDE}/offload_native.h", f"{INCLUDE}/offload_native_gpu.h"],
                   extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"])


#: hip-python must be the one of the installed ROCm release (its C API is compiled against that
#: release's headers; olInit refuses another, see README.md): one extra per ROCm line pins it.
#: hip-python's version is the ROCm release (10.0.0.0.1.2: ROCm 10.0.0, whose HIP is 7.15).
ROCM_LINES = {"rocm6-4": "6.4", "rocm7-0": "7.0", "rocm7-1": "7.1", "rocm7-2": "7.2", "rocm10-0": "10.0"}


def pinned(line: str) -> str:
    """``hip-python`` of ROCm line ``major.minor`` (its patch releases, any build)."""
    major, minor = line.split(".")
    return f"hip-python>={major}.{minor},<{major}.{int(minor) + 1}"


setup(
    install_requires=[requirement("offload-core", "../../core"), "hip-python>=6.4,<10.1"],  # the lines below
    extras_require={extra: [pinned(line)] for extra, line in ROCM_LINES.items()},
    ext_modules=[NATIVE],
)
