"""The project's own run of the conformance kit against the installed host backend.

The host backend's capabilities come from its ``offload.conformance`` entry point
(``offload_host.conformance:HostCapabilities``); the plugin is loaded through ``pytest11``.
"""

from offload_testing.suite import *  # noqa: F401,F403
