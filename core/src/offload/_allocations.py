"""The allocation map: every live olMemAlloc range, so that olMemFree and olGetMemInfo find the
owning device from a pointer alone, and so that allocations of all devices share one address
range (an allocation overlapping a live one is rejected and retried, as liboffload R1 does)."""

from __future__ import annotations

import bisect
import threading
from typing import TYPE_CHECKING, NamedTuple

from ._enums import AllocType

if TYPE_CHECKING:
    from ._handles import Device


class Allocation(NamedTuple):
    device: Device
    alloc_type: AllocType
    start: int
    end: int  # one past the last byte


class AllocationMap:
    """Live allocations keyed by base address, with a sorted base list for interior lookups."""

    __slots__ = ("_by_base", "_bases", "_lock")

    def __init__(self) -> None:
        self._by_base: dict[int, Allocation] = {}
        self._bases: list[int] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_base)

    def overlaps(self, start: int, end: int) -> bool:
        """Whether [start, end) intersects a live allocation."""
        with self._lock:
            return self._overlaps(start, end)

    def _overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._bases, end)
        return i > 0 and self._by_base[self._bases[i - 1]].end > start

    def insert(self, allocation: Allocation) -> bool:
        """Record an allocation; False (nothing recorded) if it overlaps a live one."""
        with self._lock:
            if self._overlaps(allocation.start, allocation.end):
                return False
            self._by_base[allocation.start] = allocation
            bisect.insort(self._bases, allocation.start)
            return True

    def pop(self, base: int) -> Allocation | None:
        """Remove and return the allocation starting exactly at ``base`` (None if there is none)."""
        with self._lock:
            allocation = self._by_base.pop(base, None)
            if allocation is not None:
                del self._bases[bisect.bisect_left(self._bases, base)]
            return allocation

    def find(self, address: int) -> Allocation | None:
        """The allocation containing ``address`` (any interior pointer), or None."""
        with self._lock:
            allocation = self._by_base.get(address)
            if allocation is not None:
                return allocation
            i = bisect.bisect_right(self._bases, address)
            if i:
                allocation = self._by_base[self._bases[i - 1]]
                if allocation.end > address:
                    return allocation
            return None

    def drain(self) -> list[Allocation]:
        """Remove and return every allocation (used by the final shutdown)."""
        with self._lock:
            allocations = list(self._by_base.values())
            self._by_base.clear()
            self._bases.clear()
            return allocations
