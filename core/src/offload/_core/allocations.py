"""The allocation map: every live olMemAlloc range, so that olMemFree and olGetMemInfo find the
owning device from a pointer alone, so that copies and fills can check their ranges, and so that
allocations of all devices share one address range (an allocation overlapping a live one is
rejected and retried, as liboffload R1 does).

Writers take a lock and publish a new immutable snapshot; readers (every olMemcpy) read the
current snapshot without locking, so a lookup is one attribute read and one bisect.

A range whose owner let it go (``olMemFree``, ``olDestroyProgram``) stays in the map, *retired*,
until its memory was given back: every range check refuses it meanwhile, and the two publishes
(retired, then gone) are what invalidates the range checks' cache (``_compiled.interface.HOT``, which ``_core.ranges`` writes).
"""

from __future__ import annotations

import bisect
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from .._compiled.interface import FIELDS
from .._values.enums import AllocType

if TYPE_CHECKING:
    from .handles import Device


class Allocation(NamedTuple):
    device: Device
    alloc_type: AllocType | None  # None: a global variable of a program (not an olMemAlloc range)
    start: int
    end: int  # one past the last byte
    owner: Any = None  # for a global variable: its Program
    retired: bool = False  # let go by its owner, its memory not yet given back: refused by every check


def _empty() -> tuple[tuple[int, ...], tuple[Allocation, ...]]:
    """A fresh empty snapshot: each map's snapshots are its own objects (HOT compares identity)."""
    return tuple([(), ()])  # type: ignore[return-value]


class AllocationMap:
    """Live ranges keyed by base address, published as a sorted (bases, ranges) snapshot."""

    __slots__ = (*FIELDS["allocation_map"], "_by_base", "_lock")  # (the compiled path reads the first: _compiled.interface)

    snapshot: tuple[tuple[int, ...], tuple[Allocation, ...]]  # sorted bases, their ranges

    def __init__(self) -> None:
        self._by_base: dict[int, Allocation] = {}
        self._lock = threading.Lock()
        self.snapshot = _empty()

    def __len__(self) -> int:
        return len(self._by_base)

    def _publish(self) -> None:
        by_base = self._by_base
        bases = sorted(by_base)
        self.snapshot = (tuple(bases), tuple(map(by_base.__getitem__, bases)))

    def _publish_at(self, base: int, allocation: Allocation) -> None:
        """Publish the map with the range at ``base`` (there already) replaced by ``allocation``:
        the bases stay, so nothing is sorted (a pooled block handed out or retired)."""
        bases, ranges = self.snapshot
        i = bisect.bisect_left(bases, base)
        self.snapshot = (bases, (*ranges[:i], allocation, *ranges[i + 1 :]))

    def overlaps(self, start: int, end: int) -> bool:
        """Whether [start, end) intersects a range of the map (live or retired)."""
        return touching(self.snapshot, start, end) is not None

    def insert(self, allocation: Allocation) -> bool:
        """Record a range (a retired one too); False (nothing recorded) if it overlaps one of the map."""
        with self._lock:
            if touching(self.snapshot, allocation.start, max(allocation.end, allocation.start + 1)) is not None:
                return False
            self._by_base[allocation.start] = allocation
            self._publish()
            return True

    def revive(self, allocation: Allocation) -> Any:
        """Make live again a retired range of exactly ``allocation``'s extent, as ``allocation``
        (a pooled block handed out again: it never leaves the map meanwhile); return the snapshot
        published (the first one holding it live), None if there is no such range."""
        with self._lock:
            held = self._by_base.get(allocation.start)
            if held is None or not held.retired or held.end != allocation.end:
                return None
            self._by_base[allocation.start] = allocation
            self._publish_at(allocation.start, allocation)
            return self.snapshot

    def pop(self, base: int) -> Allocation | None:
        """Remove and return the live range starting exactly at ``base`` (None if there is none)."""
        with self._lock:
            allocation = self._by_base.get(base)
            if allocation is None or allocation.retired:
                return None
            del self._by_base[base]
            self._publish()
            return allocation

    def at(self, base: int) -> Allocation | None:
        """The live range starting exactly at ``base`` (a zero-byte one too), or None."""
        allocation = self._by_base.get(base)
        return None if allocation is None or allocation.retired else allocation

    def retire(self, base: int) -> Allocation | None:
        """Mark the live range starting exactly at ``base`` retired and return it as it was (None
        if there is none): it is refused from now on, and removed by ``discard`` once given back."""
        with self._lock:
            allocation = self._by_base.get(base)
            if allocation is None or allocation.retired:
                return None
            retired = Allocation(allocation.device, allocation.alloc_type, allocation.start, allocation.end, allocation.owner, True)
            self._by_base[base] = retired
            self._publish_at(base, retired)
            return allocation

    def retire_owned_by(self, owner: Any) -> list[Allocation]:
        """Retire every live range recorded for ``owner`` (a program's global variables)."""
        with self._lock:
            found = [a for a in self._by_base.values() if a.owner is owner and not a.retired]
            for allocation in found:
                self._by_base[allocation.start] = allocation._replace(retired=True)
            self._publish()
            return found

    def discard(self, allocations: list[Allocation]) -> None:
        """Remove the retired ranges of ``allocations`` (their memory was given back)."""
        with self._lock:
            for allocation in allocations:
                held = self._by_base.get(allocation.start)
                if held is not None and held.retired and held.end == allocation.end:
                    del self._by_base[allocation.start]
            self._publish()

    def republish(self) -> None:
        """Publish the same ranges as a new snapshot: whatever was found safe in the last one
        (``_compiled.interface.HOT``, which ``_core.ranges`` writes) must be checked again."""
        with self._lock:
            self._publish()

    def find(self, address: int) -> Allocation | None:
        """The live range containing ``address`` (any interior pointer), or None."""
        bases, ranges = self.snapshot
        i = bisect.bisect_right(bases, address)
        if i:
            allocation = ranges[i - 1]
            if allocation.end > address and not allocation.retired:
                return allocation
        return None

    def drain(self) -> list[Allocation]:
        """Remove every range and return the live ones (the final shutdown frees them; a retired
        one is given back by whoever retired it)."""
        with self._lock:
            allocations = [a for a in self._by_base.values() if not a.retired]
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
