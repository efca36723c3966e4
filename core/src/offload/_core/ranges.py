"""Memory-range safety of copies and fills, checked by the core for every backend.

Every range an ``olMemcpy``, ``olMemcpyRect`` or ``olMemFill`` touches is checked before anything
is copied or enqueued, whatever ``OFFLOAD_DISABLE_VALIDATION`` says:

* no arithmetic wraps: addresses and sizes are below 2**64 and so is every range's end;
* a range that touches a live allocation (or a program's global variable) lies inside it
  (``INVALID_SIZE`` naming the range and the allocation);
* a range that touches a retired one (freed, or of a destroyed program, whose memory is not yet
  given back) is ``INVALID_ARGUMENT``;
* a range in memory of a device its backend reported faulted (``_values.faults``) is ``BACKEND_FAILURE``;
* device memory of a non-host device must be a live allocation or global variable of that
  device, so freed or never-allocated device pointers are ``INVALID_ARGUMENT``;
* host memory that is not an allocation (and the host backend's memory is host memory) must be
  mapped readable (a source) or writable (a destination), read from a cached view of
  ``/proc/self/maps`` that is re-read whenever a range is not found in it, so a bad pointer is an
  ``INVALID_ARGUMENT`` instead of a fault.

The checks read the session's two allocation maps (its allocations, and its programs' global
variables and foreign memory), passed in. What was found safe stays safe until the copy ends: the
copy holds the session's ``holds`` (``runtime.Context.hold`` / ``grace``), and memory is given back only after every copy that held it before it was
retired has finished. The cache of safe segments (``HOT``) is keyed by the allocation snapshot,
which every retirement and every give-back replaces; the view of the mappings is dropped after
memory is given back (``HostMappings.forget``), never before. Freed memory that stays mapped (a
small host allocation back in the C heap) is host memory like any other; a range unmapped by a
foreign owner after it was last seen mapped is that owner's use after free (as with any C
library) and is not detected.
"""

from __future__ import annotations

import bisect
import operator
import threading
import time
from typing import TYPE_CHECKING, Any

from .allocations import Allocation, AllocationMap, touching
from .._compiled.interface import HOT, HOT_DEVICE, HOT_DEVICE_READ, HOT_READ, HOT_WRITE
from .._values.enums import AllocType, ErrorCode
from .._values.errors import OffloadError

if TYPE_CHECKING:
    from .handles import Device

ADDRESS_LIMIT = 1 << 64
# HOT's slots (``_compiled.interface``): device memory written, host memory read and written, device
# memory read (the device slots' fourth field names the device the range was found for; a
# device-to-device copy keeps both sides hot). READ and WRITE also say what a check needs.
DEVICE, READ, WRITE, DEVICE_READ = HOT_DEVICE, HOT_READ, HOT_WRITE, HOT_DEVICE_READ

_MAPS = "/proc/self/maps"


# --- values of the flat API --------------------------------------------------------------------


def as_address(value: Any, name: str) -> int:
    """An address argument as an int: an int, an ``__offload_ptr__`` object or an ``__index__``
    integer (numpy integers); ``INVALID_ARGUMENT`` naming ``name`` for anything else."""
    result: int
    if type(value) is int:
        result = value
    elif value is None:
        return 0
    else:
        try:
            candidate: Any = getattr(value, "__offload_ptr__", None)
            if candidate is None:
                candidate = value
            if isinstance(candidate, bool):
                raise TypeError("a bool is not an address")
            result = candidate if type(candidate) is int else operator.index(candidate)
        except Exception:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT,
                f"{name} must be an int address (or have __offload_ptr__), got {type(value).__name__}",
            ) from None
    if not 0 <= result < ADDRESS_LIMIT:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{name} = {result:#x} is not a 64-bit address")
    return result


def as_size(value: Any, name: str) -> int:
    """A size argument as an int: an int or an ``__index__`` integer below 2**64
    (``INVALID_ARGUMENT`` for another type, ``INVALID_SIZE`` for a negative or too large value)."""
    size: int
    if type(value) is int:
        size = value
    else:
        try:
            if isinstance(value, bool):
                raise TypeError("a bool is not a size")
            size = operator.index(value)
        except Exception:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{name} must be an int, got {type(value).__name__}") from None
    if not 0 <= size < ADDRESS_LIMIT:
        raise OffloadError(ErrorCode.INVALID_SIZE, f"{name} = {size} is not a size (0 <= size < 2**64)")
    return size


def end_of(address: int, size: int, name: str) -> int:
    """``address + size``, refused (``INVALID_SIZE``) when the range passes the address space."""
    end = address + size
    if end > ADDRESS_LIMIT:
        raise OffloadError(
            ErrorCode.INVALID_SIZE, f"{name} range [{address:#x}, +{size}) passes the end of the 64-bit address space"
        )
    return end


# --- the host's mappings -------------------------------------------------------------------------


class HostMappings:
    """A cached view of this process's mappings (start, end, permissions), re-read on a miss."""

    __slots__ = ("view", "_lock", "available", "_buffer")

    view: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # starts, ends, READ|WRITE flags

    def __init__(self) -> None:
        self.view = ((), (), ())
        self._lock = threading.Lock()
        self.available = True
        self._buffer = bytearray(1 << 18)

    def refresh(self) -> None:
        """Re-read the mappings (called with ``_lock`` held, so a ``forget`` never interleaves)."""
        starts: list[int] = []
        ends: list[int] = []
        flags: list[int] = []
        try:
            data = self._read()
        except OSError:
            self.available = False  # no /proc: nothing can be checked
            return
        for line in data.splitlines():
            span, perms = line.split(b" ", 2)[:2]
            lo, _, hi = span.partition(b"-")
            start, end = int(lo, 16), int(hi, 16)
            flag = (READ if perms[:1] == b"r" else 0) | (WRITE if perms[1:2] == b"w" else 0)
            if starts and ends[-1] == start and flags[-1] == flag:
                ends[-1] = end  # adjacent mappings of the same permissions: one interval
            else:
                starts.append(start)
                ends.append(end)
                flags.append(flag)
        self.view = (tuple(starts), tuple(ends), tuple(flags))

    def _read(self) -> bytes:
        """The mappings file, read into a buffer that lives as long as this object: a buffer made
        for the read (a large one is a mapping of its own) would be in the view and unmapped right
        after, and a use after free of that address then accepted. Its copy is made after the read."""
        with open(_MAPS, "rb", buffering=0) as maps:
            size = 0
            while True:
                if size == len(self._buffer):  # full: a larger buffer, and read it all again
                    self._buffer = bytearray(2 * len(self._buffer))
                    maps.seek(0)
                    size = 0
                got = maps.readinto(memoryview(self._buffer)[size:])
                if not got:
                    return bytes(memoryview(self._buffer)[:size])
                size += got

    def forget(self) -> None:
        """Drop the view (memory was just given back): the next check reads the mappings afresh.
        A re-read in progress finishes first (the lock), so no view read before the unmap survives."""
        with self._lock:
            self.view = ((), (), ())

    def covers(self, start: int, end: int, need: int, view: tuple[tuple[int, ...], ...] | None = None) -> bool:
        """Whether [start, end) is mapped with ``need`` (READ, WRITE) in ``view`` (default: the current one)."""
        starts, ends, flags = self.view if view is None else view
        i = bisect.bisect_right(starts, start) - 1
        if i < 0:
            return False
        while True:
            if flags[i] & need != need:
                return False
            if end <= ends[i]:
                return True
            if i + 1 == len(starts) or starts[i + 1] != ends[i]:
                return False
            i += 1

    def check(self, start: int, end: int, need: int) -> bool:
        """Whether [start, end) is mapped with ``need``: the view, then a fresh one on a miss."""
        if self.covers(start, end, need):
            return True
        with self._lock:  # the view this re-read made: a forget() right after it must not make it a miss
            self.refresh()
            view = self.view
        return not self.available or self.covers(start, end, need, view)


def wait_for_grace(old: list[None]) -> None:
    """Wait until every copy of a grace period's ``old`` holds has ended (``runtime.Context.grace``) (they never wait for a
    queue or for memory to be given back, so this ends)."""
    delay = 0.00002
    while old:
        time.sleep(delay)
        delay = min(delay * 2, 0.002)


HOST_MAPPINGS = HostMappings()

# HOT (``_compiled.interface``, where the compiled path reads it too): the last host segment found
# safe for reading and writing, and the last allocation a device range was found in to be written
# and read, each with the allocation snapshot it was found in and, for the device slots, the
# device it was found for. A range inside one needs no lookup while that snapshot is current (any
# olMemAlloc or olMemFree publishes a new one) and, for device memory, for that same device.


def hot_slots(dst_device: Device, src_device: Device) -> tuple[int, int]:
    """The HOT slots of a copy's destination (written) and source (read) ranges."""
    return WRITE if dst_device.is_host else DEVICE, READ if src_device.is_host else DEVICE_READ


def remember_write(snapshot: Any, allocation: Allocation) -> bool:
    """Record ``allocation``, just made live in ``snapshot``, as ``check_range`` would find it for
    a write (an allocation handed out of a pool: its first use needs no lookup); False, nothing
    recorded, where ``check_range`` would refuse it (its device faulted)."""
    device = allocation.device
    if device.fault is not None or allocation.retired:
        return False
    HOT[WRITE if device.is_host else DEVICE] = (allocation.start, allocation.end, snapshot, None if device.is_host else device)
    return True


def _cached(hot: tuple[int, int, Any, Any], snapshot: Any, start: int, end: int, device: Device) -> bool:
    """Whether [start, end) lies in the segment ``hot`` (found in ``snapshot``, for ``device``)."""
    return hot[2] is snapshot and hot[0] <= start and end <= hot[1] and (hot[3] is None or hot[3] is device)


# --- range checks --------------------------------------------------------------------------------


def refuse_copy_values(dst: int, src: int, size: int) -> None:
    """Raise the error for a copy whose addresses or size are out of range or whose ends wrap
    (called once a one-test check of all three has failed, to name what was wrong)."""
    as_address(dst, "DstPtr")
    as_address(src, "SrcPtr")
    as_size(size, "Size")
    end_of(dst, size, "DstPtr")
    end_of(src, size, "SrcPtr")


def check_copy(
    allocations: AllocationMap, global_vars: AllocationMap,
    dst: int, dst_end: int, dst_device: Device, src: int, src_end: int, src_device: Device,
) -> None:  # fmt: skip
    """Check a copy's destination (written) and source (read) ranges; a range inside the host
    segment (or device allocation) last found safe needs no lookup."""
    snapshot = allocations.snapshot
    dst_slot, src_slot = hot_slots(dst_device, src_device)
    if not _cached(HOT[dst_slot], snapshot, dst, dst_end, dst_device):
        check_range(allocations, global_vars, "DstPtr", dst, dst_end, dst_device, WRITE)
    if not _cached(HOT[src_slot], snapshot, src, src_end, src_device):
        check_range(allocations, global_vars, "SrcPtr", src, src_end, src_device, READ)


def _describe(allocation: Allocation) -> str:
    if allocation.alloc_type is not None:
        what = f"{allocation.alloc_type.name} allocation"
    else:
        what = "foreign memory" if getattr(allocation.owner, "foreign", False) else "global variable"
    return f"the {what} [{allocation.start:#x}, {allocation.end:#x}) of {allocation.device._describe()}"


def check_range(
    allocations: AllocationMap, global_vars: AllocationMap, name: str, start: int, end: int, device: Device, need: int
) -> Allocation | None:
    """Check one range that an operation reads (``need=READ``) or writes (``WRITE``) as memory
    of ``device`` against the session's ``allocations`` and ``global_vars``; return the
    allocation holding it (None for plain host memory)."""
    snapshot = allocations.snapshot
    allocation = touching(snapshot, start, end)
    hot = allocation is not None  # found in the snapshot HOT is keyed by (not a global variable)
    if allocation is None and not device.is_host:
        allocation = touching(global_vars.snapshot, start, end)
    if allocation is not None:
        fault = allocation.device.fault
        if fault is not None:  # reported by its backend (_values.faults); HOT was dropped by a publish then
            raise OffloadError(
                ErrorCode.BACKEND_FAILURE,
                f"{name} range [{start:#x}, {end:#x}) lies in {_describe(allocation)}, a device that faulted "
                f"(as on CUDA after an illegal address, it takes no more work until olShutDown): {fault.details}",
            )
        if allocation.retired:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT,
                f"{name} range [{start:#x}, {end:#x}) touches {_describe(allocation)}, which "
                + (
                    "was freed"
                    if allocation.alloc_type is not None
                    else "was released by its importer"
                    if getattr(allocation.owner, "foreign", False)
                    else "belongs to a destroyed program"
                )
                + " (its memory is being given back)",
            )
        if start < allocation.start or end > allocation.end:
            raise OffloadError(
                ErrorCode.INVALID_SIZE, f"{name} range [{start:#x}, {end:#x}) overruns {_describe(allocation)}"
            )
        if device.is_host:
            if allocation.alloc_type is AllocType.DEVICE and not allocation.device.is_host:
                raise OffloadError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{name} {start:#x} lies in {_describe(allocation)}, which the host cannot access; pass its device",
                )
            HOT[need] = (allocation.start, allocation.end, snapshot, None)
        else:
            other = allocation.device
            if other is not device and (allocation.alloc_type is AllocType.DEVICE or allocation.alloc_type is None):
                raise OffloadError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{name} {start:#x} lies in {_describe(allocation)}, not in memory of {device._describe()}",
                )
            if hot:
                HOT[DEVICE if need == WRITE else DEVICE_READ] = (allocation.start, allocation.end, snapshot, device)
        return allocation
    if not device.is_host:
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT,
            f"{name} {start:#x} is not a live allocation of {device._describe()} (freed, or never allocated)",
        )
    if end > start:
        if not HOST_MAPPINGS.check(start, end, need):
            access = "readable" if need == READ else "writable"
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT, f"{name} range [{start:#x}, {end:#x}) is not mapped {access} host memory"
            )
        _remember(snapshot, start, end, need)
    return None


def _remember(snapshot: Any, start: int, end: int, need: int) -> None:
    """Record in HOT the largest safe segment around [start, end): its mapping interval, clipped
    by the ranges of ``snapshot`` (the one the range was checked in) on either side (when one
    interval of the view covers the range)."""
    starts, ends, _ = HOST_MAPPINGS.view
    i = bisect.bisect_right(starts, start) - 1
    if i < 0 or end > ends[i]:
        return
    lo, hi = starts[i], ends[i]
    bases, ranges = snapshot
    k = bisect.bisect_right(bases, start)
    if k:
        lo = max(lo, ranges[k - 1].end)
    if k < len(bases):
        hi = min(hi, bases[k])
    if lo <= start and end <= hi:
        HOT[need] = (lo, hi, snapshot, None)
