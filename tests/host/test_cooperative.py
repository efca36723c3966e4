"""Cooperative launches on the host device (issue 17): every group on a thread of its own, and
``OFFLOAD_GRID_BARRIER()`` really waits for all of them."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
import offload_host

from helpers import devices

GRID_SYNC = r"""
/* each group writes its id + 1, waits at the grid barrier, then sums what every group wrote:
 * with a real barrier every group sees every write; the last groups arrive first, so a missing
 * barrier shows as a short sum */
#include "offload_host.h"
struct grid_sync_args { uint32_t *slots; uint32_t *sums; };
OFFLOAD_KERNEL_PARAMS(grid_sync, struct grid_sync_args, OFFLOAD_POINTER(slots), OFFLOAD_POINTER(sums));
OFFLOAD_KERNEL(grid_sync) {
  const struct grid_sync_args *a = OFFLOAD_ARGS(struct grid_sync_args);
  uint32_t me = OFFLOAD_GROUP->group_id.x, n = OFFLOAD_GROUP->num_groups.x;
  for (volatile int spin = 0; spin < (int)((n - me) * 20000); ++spin) {
  }
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (tid.x == 0) __atomic_store_n(&a->slots[me], me + 1, __ATOMIC_RELEASE);
  }
  OFFLOAD_GRID_BARRIER();
  OFFLOAD_FOR_EACH_ITEM(tid) {
    if (tid.x == 0) {
      uint32_t sum = 0;
      for (uint32_t g = 0; g < n; ++g) sum += __atomic_load_n(&a->slots[g], __ATOMIC_ACQUIRE);
      a->sums[me] = sum;
    }
  }
}
"""

COOPERATIVE = {ol.KernelLaunchPropType.IS_COOPERATIVE: True}


@pytest.fixture
def host() -> Iterator[Any]:
    ol.olInit()
    try:
        yield next(d for d in devices() if d.platform.kind is ol.PlatformBackend.HOST)
    finally:
        ol.olShutDown()


def _launch(groups: int) -> ol.KernelLaunchSizeArgs:
    return ol.KernelLaunchSizeArgs(1, (groups, 1, 1), (4, 1, 1))


@pytest.mark.parametrize("queued", [False, True], ids=["sync", "queue"])
def test_grid_barrier_synchronises_every_group(host: Any, queued: bool) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(GRID_SYNC, name="grid_sync"))
    kernel = ol.olGetSymbol(program, "grid_sync", ol.SymbolKind.KERNEL)
    groups = 32
    slots, sums = ol.olMemAlloc(host, ol.AllocType.DEVICE, 4 * groups), ol.olMemAlloc(host, ol.AllocType.DEVICE, 4 * groups)
    ctypes.memset(slots, 0, 4 * groups)
    queue = ol.olCreateQueue(host) if queued else None
    ol.olLaunchKernel(queue, host, kernel, struct.pack("PP", slots, sums), _launch(groups), COOPERATIVE)
    if queue is not None:
        ol.olSyncQueue(queue)
        ol.olDestroyQueue(queue)
    assert list((ctypes.c_uint32 * groups).from_address(sums)) == [groups * (groups + 1) // 2] * groups
    assert ol.olGetKernelMaxCooperativeGroupCount(host, kernel, _launch(1)) == 256
    assert ol.olGetDeviceInfo(host, ol.DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT) is True
    ol.olMemFree(slots)
    ol.olMemFree(sums)
    ol.olDestroyProgram(program)


def test_more_groups_than_can_run_at_once(host: Any) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(GRID_SYNC, name="grid_sync"))
    kernel = ol.olGetSymbol(program, "grid_sync", ol.SymbolKind.KERNEL)
    with pytest.raises(ol.OffloadError) as info:
        ol.olLaunchKernel(None, host, kernel, struct.pack("PP", 0, 0), _launch(257), COOPERATIVE)
    assert info.value.code is ol.ErrorCode.INVALID_SIZE and "257" in info.value.details
    ol.olDestroyProgram(program)


def test_grid_barrier_outside_a_cooperative_launch_traps(run_python: Any) -> None:
    """A grid barrier in an ordinary launch is undefined on a GPU; on the host it traps (in a child)."""
    code = f"""
import struct, offload as ol, offload_host
ol.olInit()
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
host = found[-1]
program = ol.olCreateProgram(host, offload_host.build_program({GRID_SYNC!r}, name="grid_sync"))
kernel = ol.olGetSymbol(program, "grid_sync", ol.SymbolKind.KERNEL)
slots = ol.olMemAlloc(host, ol.AllocType.DEVICE, 8)
ol.olLaunchKernel(None, host, kernel, struct.pack("PP", slots, slots), ol.KernelLaunchSizeArgs(1, (2, 1, 1), (1, 1, 1)))
print("survived")
"""
    proc = run_python(code, check=False)
    assert proc.returncode != 0 and "survived" not in proc.stdout
