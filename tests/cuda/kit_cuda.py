"""The conformance kit, unchanged, for the CUDA platform (run by test_conformance_cuda.py in a
child process whose environment points at the simulated driver, or at a real one)."""

from offload.testing.suite import *  # noqa: F401,F403
