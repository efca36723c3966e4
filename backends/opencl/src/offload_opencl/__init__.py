"""offload-opencl: the OpenCL backend of offload, on PyOpenCL.

Found by the core through the ``offload.backends`` entry point ``opencl``. Devices need shared
virtual memory (OpenCL 2.0 SVM): its pointers are the API's ``void *`` addresses. Programs are
OpenCL C source (UTF-8 text) or SPIR-V where the device takes IL; ``test_program(name)`` reads the
liboffload test programs and ``saxpy`` shipped with the package.
"""

from __future__ import annotations

from pathlib import Path

from ._backend import OpenCLBackend
from ._errors import ERROR_CODES

__all__ = ["ERROR_CODES", "KERNELS", "OpenCLBackend", "test_program"]

KERNELS = Path(__file__).parent / "kernels"


def test_program(name: str) -> bytes | None:
    """The OpenCL C source of test program ``name`` (``kernels/<name>.cl``), None if there is none."""
    path = KERNELS / f"{name}.cl"
    return path.read_bytes() if path.is_file() else None
