"""The core's pool of device memory for ``olMemAllocAsync`` / ``olMemFreeAsync`` on backends
without stream-ordered allocation hooks (the host, OpenCL): blocks freed in a queue's order come
back here once the queue reaches the free, and a later allocation of the same size takes one
instead of calling ``mem_alloc``. Exact sizes only, so a reused block is exactly as large as the
allocation the map records (the range checks stay as strict as for ``olMemAlloc``).

A block in the pool is in no allocation map (every check refuses it) and no queue's work uses it
(it came back when its queue reached the free), so any queue may take it. The final
``olShutDown`` gives pooled blocks back with ``mem_free`` after every queue finished, as it does
allocations.
"""

from __future__ import annotations

import threading

from ._enums import AllocType

__all__ = ["DevicePool"]


class DevicePool:
    """Free blocks of one device by size (``put`` once a queue reached their free, ``take``)."""

    __slots__ = ("_blocks", "_lock")

    def __init__(self) -> None:
        self._blocks: dict[int, list[int]] = {}
        self._lock = threading.Lock()

    def take(self, size: int) -> int | None:
        """A free block of exactly ``size`` bytes (the last one given back), or None."""
        with self._lock:
            blocks = self._blocks.get(size)
            return blocks.pop() if blocks else None

    def put(self, address: int, size: int) -> None:
        with self._lock:
            self._blocks.setdefault(size, []).append(address)

    def drain(self) -> list[tuple[int, AllocType]]:
        """Every pooled block, as ``(address, DEVICE)``, the pool left empty (the shutdown frees them)."""
        with self._lock:
            blocks = [(address, AllocType.DEVICE) for addresses in self._blocks.values() for address in addresses]
            self._blocks.clear()
        return blocks

    def __len__(self) -> int:
        with self._lock:
            return sum(len(addresses) for addresses in self._blocks.values())
