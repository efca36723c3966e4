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
    """Every feature of the suite, occupancy included (through HIP's occupancy API); every flag is
    derived from the hooks. Declared: what the hooks cannot show, the ``global_dtor`` program's
    ``dtor_out`` and where the programs are."""

    dtor_out = True
    programs_env = PROGRAMS_ENV
    programs_suffix = ".hsaco"
