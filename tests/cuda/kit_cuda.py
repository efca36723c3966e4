"""The conformance kit, unchanged, for the CUDA platform (run by test_cuda_conformance.py in a
child process whose environment points at the simulated driver, or at a real one)."""

from offload_testing.suite import *  # noqa: F401,F403
