"""The host backend's capabilities for the offload conformance suite (``offload.testing``).

Declared as the ``offload.conformance`` entry point ``host``.
"""

from __future__ import annotations

from offload import DeviceInfo
from offload.testing import Capabilities

from .build import TEST_KERNELS, build_test_kernel

__all__ = ["HostCapabilities"]


class HostCapabilities(Capabilities):
    """Everything but occupancy (the host backend has no ``max_group_size`` hook: UNSUPPORTED)."""

    kernel_launch = True
    host_functions = True
    events_elapsed_time = True
    occupancy = False
    mem_register = True
    managed_memory = True
    host_memory = True
    queued_fill = True
    dtor_out = True
    #: Read from this machine (``_device_info.probe``): the memory clock is 0 when the firmware
    #: hides SMBIOS, half precision is absent without AVX512-FP16, the PCI vendor id is 0 for
    #: CPU vendors other than AMD and Intel, and the clock is 0 without cpufreq or "cpu MHz".
    zero_info = frozenset(
        {
            DeviceInfo.MEMORY_CLOCK_RATE,
            DeviceInfo.NATIVE_VECTOR_WIDTH_HALF,
            DeviceInfo.HALF_FP_CONFIG,
            DeviceInfo.VENDOR_ID,
            DeviceInfo.MAX_CLOCK_FREQUENCY,
        }
    )

    def binary(self, name: str) -> bytes | None:
        """The shipped C test program ``name``, compiled with the system compiler (cached).

        None when there is no such program; a missing compiler or a failed build raises (a
        broken toolchain must fail the suite, not skip it).
        """
        if name not in TEST_KERNELS:
            return None
        return build_test_kernel(name)
