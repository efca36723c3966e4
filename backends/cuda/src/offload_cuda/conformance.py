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
    """Everything: launches, host functions, elapsed time, occupancy, registration, queued fills,
    and the ``global_dtor`` program's ``dtor_out`` (the NVPTX destructor kernel)."""

    kernel_launch = True
    host_functions = True
    events_elapsed_time = True
    occupancy = True
    mem_register = True
    managed_memory = True
    host_memory = True
    queued_fill = True
    dtor_out = True
    programs_env = PROGRAMS_ENV
    programs_suffix = ".bin"
