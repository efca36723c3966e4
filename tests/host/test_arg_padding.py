"""An undeclared host kernel reading past a short argument buffer reads zeros (the backend pads
argument copies to 4 KiB), never other memory. In a child: the old behaviour read the heap."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import HOST_CHILD_PRELUDE

CODE = HOST_CHILD_PRELUDE + r"""
import ctypes, struct

SOURCE = '''#include <offload_host.h>
#include <stdint.h>
OFFLOAD_KERNEL(peek) {  /* undeclared: no OFFLOAD_KERNEL_PARAMS */
  const uint64_t *a = OFFLOAD_ARGS(uint64_t);
  uint64_t *out = (uint64_t *)a[0];
  OFFLOAD_FOR_EACH_ITEM(tid) { if (tid.x == 0) { out[0] = a[1]; out[1] = a[255]; out[2] = a[511]; } }
}
'''
program, peek = build_kernel(SOURCE, "peek")
out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 24)
ONE = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
# the 8 argument bytes sit at the start of a larger buffer full of 0xff: what lies past them
big = bytearray(b"\xff" * 8192)
big[:8] = struct.pack("P", out)
args = memoryview(big)[:8]
for queue in (None, ol.olCreateQueue(host)):
    ctypes.memset(out, 0x55, 24)
    ol.olLaunchKernel(queue, host, peek, args, ONE)
    if queue is not None:
        ol.olSyncQueue(queue)
    print(list((ctypes.c_uint64 * 3).from_address(out)))
"""


def test_an_undeclared_kernel_reads_zeros_past_its_arguments(run_python: Any) -> None:
    lines = run_python(CODE).stdout.splitlines()
    assert lines == ["[0, 0, 0]", "[0, 0, 0]"], lines
