"""The conformance kit on the OpenCL platform (run by test_opencl_conformance.py in a child
process with OFFLOAD_TEST_PLATFORM=opencl; not collected directly)."""

from offload_testing.suite import *  # noqa: F401,F403
