"""What the tests of the host backend's native queues share: their kernels (``tid`` writes the
running thread's id, ``bump`` increments a 32-bit counter), a one-item launch size and a reader
of a 32-bit word (the fixtures ``kernels`` and ``word`` are in conftest.py)."""

from __future__ import annotations

import ctypes

import offload as ol

KERNELS = r"""
#include <offload_host.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

struct tid_args { long *out; };
OFFLOAD_KERNEL(tid) { *OFFLOAD_ARGS(struct tid_args)->out = syscall(SYS_gettid); }

struct bump_args { uint32_t *counter; };
OFFLOAD_KERNEL(bump) { ++*OFFLOAD_ARGS(struct bump_args)->counter; }
"""

ONE = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))


def u32(address: int) -> int:
    """The 32-bit word at ``address``."""
    return ctypes.c_uint32.from_address(address).value
