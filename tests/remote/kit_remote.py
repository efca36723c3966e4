"""The conformance kit, unchanged, on the remote platform (run by test_remote_conformance.py in a
child process with OFFLOAD_TEST_PLATFORM=remote; not collected directly)."""

from offload_testing.suite import *  # noqa: F401,F403
