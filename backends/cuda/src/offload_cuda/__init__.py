"""offload-cuda: the CUDA backend of offload, on cuda.bindings' driver API.

Found by the core through the ``offload.backends`` entry point ``cuda``. ``cuda.bindings`` is
imported when the backend initialises (``olInit``), not when this package is imported. Programs
are cubin, fatbin or PTX images (e.g. from ``nvcc -cubin``).
"""

from __future__ import annotations

from ._backend import CudaBackend
from ._binary import image_format
from ._errors import ERROR_CODES, CudaError, error_code

__all__ = ["CudaBackend", "CudaError", "ERROR_CODES", "error_code", "image_format"]
