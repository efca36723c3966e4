"""Builds the optional native entry points (``_native``: without a C compiler the backend serves
through its Python hooks alone), and pins offload-core to the shared VERSION (everything else
lives in pyproject.toml)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _offload_setup.py: a link to the checkout root's
from _offload_setup import gpu_native, requirement  # noqa: E402  (an sdist carries a copy)
from setuptools import setup  # noqa: E402

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
    ext_modules=[gpu_native("offload_amdgpu")],
)
