"""The core's pool of device memory for ``olMemAllocAsync`` / ``olMemFreeAsync``: on every backend,
each queue keeps the blocks freed on it for its own next allocations (no driver call, one publish
of the map); on backends without stream-ordered allocation hooks (the host, OpenCL), the blocks a
queue does not keep come back to the device's pool once the queue reaches the free, and a later
allocation of the same size on any queue takes one instead of calling ``mem_alloc``. Exact sizes only, so a reused block is exactly as large as the
allocation the map records (the range checks stay as strict as for ``olMemAlloc``).

A pooled block stays in the allocation map, retired (every check refuses it). One in the device's
pool is used by no queue's work (it came back when its queue reached the free), so any queue may
take it; one a queue keeps may be in use by that queue's earlier work, so only that queue does. The final
``olShutDown`` gives pooled blocks back with ``mem_free`` after every queue finished, as it does
allocations.
"""

from __future__ import annotations

import threading

from .._values.enums import AllocType

__all__ = ["DevicePool"]


QUEUE_CACHE_BLOCKS = 32  # blocks a queue keeps for its own next allocations (more go back to the driver or the pool)


class DevicePool:
    """Free blocks of one device by size (``put`` once a queue reached their free, ``take``), and
    per queue the blocks freed on it (``keep`` / ``reuse``): a block freed on a queue serves that
    queue's next allocation of its size at once, since the queue's order puts every earlier use
    before any later one (the driver's pools reuse memory on one stream so too)."""

    __slots__ = ("_blocks", "_queues", "_kept", "_lock")

    def __init__(self) -> None:
        self._blocks: dict[int, list[int]] = {}
        self._queues: dict[int, dict[int, list[int]]] = {}  # queue id -> size -> addresses
        self._kept: dict[int, int] = {}  # queue id -> how many blocks it keeps
        self._lock = threading.Lock()

    def keep(self, queue_id: int, address: int, size: int) -> bool:
        """Keep a block freed on a queue for that queue; False (not kept) when it holds enough."""
        with self._lock:
            kept = self._kept.get(queue_id, 0)
            if kept >= QUEUE_CACHE_BLOCKS:
                return False
            self._kept[queue_id] = kept + 1
            self._queues.setdefault(queue_id, {}).setdefault(size, []).append(address)
            return True

    def reuse(self, queue_id: int, size: int) -> int | None:
        """A block of exactly ``size`` bytes freed on the queue, or None."""
        with self._lock:
            sizes = self._queues.get(queue_id)
            blocks = sizes.get(size) if sizes else None
            if not blocks:
                return None
            self._kept[queue_id] -= 1
            return blocks.pop()

    def forget_queue(self, queue_id: int) -> list[tuple[int, int]]:
        """The blocks a queue kept, as ``(address, size)`` (the queue is being destroyed)."""
        with self._lock:
            sizes = self._queues.pop(queue_id, {})
            self._kept.pop(queue_id, None)
        return [(address, size) for size, addresses in sizes.items() for address in addresses]

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
            blocks += [(a, AllocType.DEVICE) for sizes in self._queues.values() for addresses in sizes.values() for a in addresses]
            self._blocks.clear()
            self._queues.clear()
            self._kept.clear()
        return blocks

    def __len__(self) -> int:
        with self._lock:
            return sum(self._kept.values()) + sum(len(addresses) for addresses in self._blocks.values())
