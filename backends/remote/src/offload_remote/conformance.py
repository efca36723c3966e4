"""The remote backend's capabilities for the conformance kit (entry point ``remote``): every flag
from the hooks it serves (``served_hooks``: the server's backend decides occupancy, ...), the host
backend's test programs, and no MANAGED or HOST memory. ``dtor_out`` stays False: a pointer
written into device memory is the client's, which the server's destructor cannot follow."""

from offload.testing import Capabilities
from offload_host.conformance import HostCapabilities


class RemoteCapabilities(Capabilities):
    managed_memory = False
    host_memory = False
    zero_info = HostCapabilities.zero_info
    binary = HostCapabilities.binary
