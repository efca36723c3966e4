"""offload-host: the host (CPU) backend of offload.

Found by the core through the ``offload.backends`` entry point ``host``. Kernels are C functions
written against ``include_dir()/offload_host.h``; ``build_program(source)`` compiles them into
program bytes for ``olCreateProgram``.
"""

from __future__ import annotations

from ._backend import HostBackend
from .build import (
    TEST_KERNELS,
    OffloadHostCacheWarning,
    build_program,
    build_test_kernel,
    include_dir,
    machine_flags,
    test_kernel_source,
)

__all__ = [
    "HostBackend",
    "OffloadHostCacheWarning",
    "TEST_KERNELS",
    "build_program",
    "build_test_kernel",
    "include_dir",
    "machine_flags",
    "test_kernel_source",
]
