"""The OpenCL backend's capabilities for the offload conformance suite (``offload.testing``).

Declared as the ``offload.conformance`` entry point ``opencl``. The test programs are OpenCL C
sources shipped in ``kernels/``. OpenCL has no way to give the address of a program-scope variable
(``clGetProgramGlobalVariablePointer`` is an Intel extension) and OpenCL C no constructors or
destructors: ``globals`` and ``constructors`` are absent (no ``get_global`` hook).
"""

from __future__ import annotations

from offload import DeviceInfo
from offload.testing import Capabilities

from . import test_program

__all__ = ["OpenCLCapabilities"]


class OpenCLCapabilities(Capabilities):
    """Launches, host functions, events with elapsed time, occupancy, SVM memory of every kind;
    no globals, constructors or host-memory registration."""

    kernel_launch = True
    host_functions = True
    events_elapsed_time = True
    occupancy = True
    managed_memory = True
    host_memory = True
    queued_fill = True
    constructors = False
    zero_info = frozenset({DeviceInfo.MEMORY_CLOCK_RATE})

    def binary(self, name: str) -> bytes | None:
        return test_program(name)
