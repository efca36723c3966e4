"""offload-amdgpu: the AMDGPU backend of offload, on hip-python.

Found by the core through the ``offload.backends`` entry point ``amdgpu``. Programs are AMDGPU
code objects (``clang --offload-arch=gfxNNN --cuda-device-only``) or clang offload bundles;
``Target`` and ``code_object_for`` read them without HIP. hip-python is imported by ``init``
only; with no HIP runtime or no GPU the platform has zero devices and
``AMDGPUBackend.unavailable_reason`` says why.
"""

from __future__ import annotations

from ._backend import AMDGPUBackend
from ._code_object import CodeObject, KernelInfo, Target, code_object_for
from ._errors import ERROR_CODES, HIP_ERROR_CODES, HipError, error_code

__all__ = [
    "AMDGPUBackend",
    "CodeObject",
    "ERROR_CODES",
    "HIP_ERROR_CODES",
    "HipError",
    "KernelInfo",
    "Target",
    "code_object_for",
    "error_code",
]
