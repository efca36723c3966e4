"""The allocation map: every live olMemAlloc range, so that olMemFree and olGetMemInfo find the
owning device from a pointer alone, so that copies and fills can check their ranges, and so that
allocations of all devices share one address range (an allocation overlapping a live one is
rejected and retried, as liboffload R1 does).

Writers take a lock and publish a new immutable snapshot; readers (every olMemcpy) read the
current snapshot without locking, so a lookup is one attribute read and one bisect.
"""

from __future__ import annotations

import bisect
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from ._enums import AllocType

if TYPE_CHECKING:
    from ._handles import Device


class Allocation(NamedTuple):
    device: Device
    alloc_type: AllocType | None  # None: a global variable of a program (not an olMemAlloc range)
    start: int
    end: int  # one past the last byte
    owner: Any = None  # for a global variable: its Program


def _empty() -> tuple[tuple[int, ...], tuple[Allocation, ...]]:
    """A fresh empty snapshot: each map's snapshots are its own objects (HOT compares identity)."""
    return tuple([(), ()])  # type: ignore[return-value]


class AllocationMap:
    """Live ranges keyed by base address, published as a sorted (bases, ranges) snapshot."""

    __slots__ = ("_by_base", "_lock", "snapshot")

    snapshot: tuple[tuple[int, ...], tuple[Allocation, ...]]  # sorted bases, their ranges

    def __init__(self) -> None:
        self._by_base: dict[int, Allocation] = {}
        self._lock = threading.Lock()
        self.snapshot = _empty()

    def __len__(self) -> int:
        return len(self._by_base)

    def _publish(self) -> None:
        bases = sorted(self._by_base)
        self.snapshot = (tuple(bases), tuple(self._by_base[b] for b in bases))

    def overlaps(self, start: int, end: int) -> bool:
        """Whether [start, end) intersects a live range."""
        return touching(self.snapshot, start, end) is not None

    def insert(self, allocation: Allocation) -> bool:
        """Record a range; False (nothing recorded) if it overlaps a live one."""
        with self._lock:
            if touching(self.snapshot, allocation.start, max(allocation.end, allocation.start + 1)) is not None:
                return False
            self._by_base[allocation.start] = allocation
            self._publish()
            return True

    def pop(self, base: int) -> Allocation | None:
        """Remove and return the range starting exactly at ``base`` (None if there is none)."""
        with self._lock:
            allocation = self._by_base.pop(base, None)
            if allocation is not None:
                self._publish()
            return allocation

    def remove_owned_by(self, owner: Any) -> None:
        """Remove every range recorded for ``owner`` (a program's global variables)."""
        with self._lock:
            for base in [b for b, a in self._by_base.items() if a.owner is owner]:
                del self._by_base[base]
            self._publish()

    def find(self, address: int) -> Allocation | None:
        """The range containing ``address`` (any interior pointer), or None."""
        bases, ranges = self.snapshot
        i = bisect.bisect_right(bases, address)
        if i:
            allocation = ranges[i - 1]
            if allocation.end > address:
                return allocation
        return None

    def drain(self) -> list[Allocation]:
        """Remove and return every range (used by the final shutdown)."""
        with self._lock:
            allocations = list(self._by_base.values())
            self._by_base.clear()
            self.snapshot = _empty()
            return allocations


def touching(snapshot: tuple[tuple[int, ...], tuple[Allocation, ...]], start: int, end: int) -> Allocation | None:
    """A range of ``snapshot`` that [start, end) touches: the one holding ``start``, else the
    first one beginning inside [start, end); None when the range touches none."""
    bases, ranges = snapshot
    i = bisect.bisect_right(bases, start)
    if i:
        allocation = ranges[i - 1]
        if allocation.end > start:
            return allocation
    if i < len(bases) and bases[i] < end:
        return ranges[i]
    return None
