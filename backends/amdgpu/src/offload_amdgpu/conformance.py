"""The AMDGPU backend's capabilities for the offload conformance suite (``offload.testing``).

Declared as the ``offload.conformance`` entry point ``amdgpu``. The test programs are code
objects built from liboffload's test kernels by whoever runs the suite (this project's tests
build them with clang-19); ``binary`` reads ``$OFFLOAD_AMDGPU_PROGRAMS/<name>.hsaco``.
"""

from __future__ import annotations

from offload.testing import Capabilities

__all__ = ["PROGRAMS_ENV", "AMDGPUCapabilities"]

#: A folder holding ``<program>.hsaco`` for the device's gfx target.
PROGRAMS_ENV = "OFFLOAD_AMDGPU_PROGRAMS"


class AMDGPUCapabilities(Capabilities):
    """Every feature of the suite, occupancy included (through HIP's occupancy API)."""

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
    programs_suffix = ".hsaco"
