"""The conformance kit on the OpenCL platform (run by test_opencl_conformance.py in a child
process with OFFLOAD_TEST_PLATFORM=opencl; not collected directly).

Where the PoCL under test cannot compile for this CPU, the parent passes the reason in
OFFLOAD_TEST_OPENCL_CANNOT_COMPILE: every case that needs a test program then skips with it, and
the rest (discovery, device info, memory, copies, queues, events) runs."""

import os

import pytest

from offload.testing import register_capabilities
from offload_testing.suite import *  # noqa: F401,F403
from offload_opencl.conformance import OpenCLCapabilities

_WHY = os.environ.get("OFFLOAD_TEST_OPENCL_CANNOT_COMPILE")


class _CannotCompile(OpenCLCapabilities):
    """The OpenCL capabilities, with the test programs refused: they would need the compiler."""

    def binary(self, name: str) -> bytes | None:
        pytest.skip(f"program {name!r} needs the OpenCL C compiler: {_WHY}")


if _WHY:
    register_capabilities("opencl", _CannotCompile)
