"""The conformance kit on the AMDGPU platform (run by test_amdgpu_conformance.py in a child
process whose LD_LIBRARY_PATH holds the simulated HIP runtime; not collected directly)."""

from offload_testing.suite import *  # noqa: F401,F403
