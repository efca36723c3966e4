"""The CUDA backend's capabilities for the offload conformance suite (``offload.testing``).

Declared as the ``offload.conformance`` entry point ``cuda``. The test programs are CUDA images
built from liboffload's test kernels (this project builds them from tests/kernels/gpu/*.cu with
nvcc): ``OFFLOAD_CUDA_TEST_PROGRAMS`` names a directory holding ``<program>.bin`` for each; without
it the tests that need programs skip.
"""

from __future__ import annotations

from offload.testing import Capabilities

__all__ = ["CudaCapabilities", "PROGRAMS_ENV"]

PROGRAMS_ENV = "OFFLOAD_CUDA_TEST_PROGRAMS"


class CudaCapabilities(Capabilities):
    """Everything; every flag is derived from the hooks (launches, host functions, elapsed time,
    occupancy, registration, managed and host memory, queued fills: tests/cuda's kit run lets
    none skip). Declared: what the hooks cannot show, the ``global_dtor`` program's ``dtor_out``
    (the NVPTX destructor kernel) and where the programs are."""

    dtor_out = True
    programs_env = PROGRAMS_ENV
    programs_suffix = ".bin"
