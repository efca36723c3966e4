"""Stream-ordered memory (the ``mem_alloc_async`` / ``mem_free_async`` hooks): one memory pool
of offload's own per device (``cuMemPoolCreate``), made on first use, so the device's default
pool, which other libraries of the process share, keeps its owners' settings.

Its release threshold is the device's memory (``CU_MEMPOOL_ATTR_RELEASE_THRESHOLD``: "Amount of
reserved memory in bytes to hold onto before trying to release memory back to the OS. When more
than the release threshold bytes of memory are held by the memory pool, the allocator will try
to release memory back to the OS on the next call to stream, event or context synchronize"), so
a loop that allocates and frees on a queue reuses the pool's memory instead of the driver
mapping it anew after each synchronisation; the pool is trimmed to nothing and destroyed with
the device (``release``). Allocation: ``cuMemAllocFromPoolAsync``; free: ``cuMemFreeAsync``
(which also takes a ``cuMemAlloc`` allocation's base, as hookspecs allows).
"""

from __future__ import annotations

import threading
from typing import Any

from ._device import CudaDevice
from ._driver import check

__all__ = ["StreamOrderedPool"]

_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_LOCATION_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_RELEASE_THRESHOLD = 4  # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD


class StreamOrderedPool:
    """The device's offload pool, created by the first ``alloc``."""

    __slots__ = ("device", "_pool", "_lock")

    def __init__(self, device: CudaDevice) -> None:
        self.device = device
        self._pool: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._pool is None:
                d = self.device.driver
                props = d.CUmemPoolProps()
                props.allocType = d.CUmemAllocationType(_PINNED)
                props.location.type = d.CUmemLocationType(_LOCATION_DEVICE)
                props.location.id = self.device.ordinal
                pool = check(d, d.cuMemPoolCreate(props), "cuMemPoolCreate")
                try:
                    total = int(check(d, d.cuDeviceTotalMem(self.device.handle), "cuDeviceTotalMem"))
                    check(d, d.cuMemPoolSetAttribute(pool, d.CUmemPool_attribute(_RELEASE_THRESHOLD), d.cuuint64_t(total)),
                          "cuMemPoolSetAttribute(RELEASE_THRESHOLD)")  # fmt: skip
                except BaseException:
                    d.cuMemPoolDestroy(pool)
                    raise
                self._pool = pool
            return self._pool

    def alloc(self, stream: Any, size: int) -> int:
        d = self.device.driver
        self.device.activate()
        pool = self._get()
        return int(check(d, d.cuMemAllocFromPoolAsync(size, pool, stream), "cuMemAllocFromPoolAsync"))

    def free(self, stream: Any, address: int) -> None:
        d = self.device.driver
        self.device.activate()
        check(d, d.cuMemFreeAsync(address, stream), "cuMemFreeAsync")

    def release(self) -> None:
        """Trim and destroy the pool (at ``deinit_device``: its allocations were freed before)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            d = self.device.driver
            self.device.activate()
            check(d, d.cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")
            check(d, d.cuMemPoolDestroy(pool), "cuMemPoolDestroy")
