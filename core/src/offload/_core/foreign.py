"""Device memory another library allocated (CuPy, torch, Numba, a raw driver call), made known to
the core so that ``olMemcpy`` / ``olMemFill`` accept it like an allocation of that device.

The core refuses a non-host device pointer that is not its own allocation or a global variable
(a bad pointer there is a fault, not an error code). An importer that knows a range is live
(``offload.from_dlpack``, ``offload.from_cuda_array_interface``: the producer keeps it alive while
the import lives) registers it here for the import's lifetime. Ranges of one device that nest are
counted, not registered twice; a range overlapping an offload allocation needs no registration.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .allocations import Allocation, touching
from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._values.errors import as_offload_error
from .handles import Device as DeviceHandle
from .handles import Event as EventHandle
from .ranges import as_address, as_size, end_of, wait_for_grace
from .session import STATE

__all__ = ["ForeignMemory", "foreign_stream_sync", "foreign_stream_wait", "register_foreign_memory"]

_lock = threading.Lock()


class ForeignMemory:
    """One registration of ``[start, end)`` on ``device``; ``release()`` (idempotent) ends it."""

    __slots__ = ("device", "start", "end", "_ctx", "_entry", "__weakref__")

    def __init__(self, device: DeviceHandle, start: int, end: int, ctx: Any, entry: _Entry | None) -> None:
        self.device, self.start, self.end, self._ctx, self._entry = device, start, end, ctx, entry

    @property
    def registered(self) -> bool:
        """Whether this import added the range (False: offload already knew the memory)."""
        return self._entry is not None

    def release(self, keep: object = None, wait: bool = True) -> None:
        """End this import (idempotent; nothing after the session ended). Once its range's last
        importer released it, the range is retired (every check refuses it from then on) and the
        copies and fills that checked it before are given a grace period, as ``olMemFree`` gives
        them (core/DESIGN.md, "Memory is retired, held, then given back"):

        - ``wait=True``: returns once they have ended, so the producer may free the memory then;
        - ``wait=False`` (a finalizer, which may run inside a copy's hold, where waiting would never
          end): returns at once, and ``keep`` (what keeps the producer's memory alive) is dropped
          only once they have ended."""
        with _lock:
            entry, self._entry = self._entry, None
            if entry is None:
                return
            entry.users -= 1
            ctx = STATE.ctx
            if entry.users or ctx is None or self._ctx is not ctx:
                return
            retired = ctx.globals.retire(entry.allocation.start)
            if retired is None:
                return
            holds = ctx.grace()
        if wait or not holds:
            wait_for_grace(holds)
            ctx.globals.discard([retired])
            return
        thread = threading.Thread(
            target=_give_back_after, args=(holds, ctx, retired, keep), name="offload-foreign-grace", daemon=True
        )
        thread.start()

    def __repr__(self) -> str:
        return f"<offload.ForeignMemory [{self.start:#x}, {self.end:#x}) of {self.device._describe()}>"


def _give_back_after(holds: list[None], ctx: Any, retired: Allocation, keep: object) -> None:
    """Forget a released foreign range once the copies that checked it before have ended, then let
    go of ``keep`` (the producer may free the memory from then on)."""
    wait_for_grace(holds)
    ctx.globals.discard([retired])
    del keep


class _Entry:
    __slots__ = ("allocation", "users")

    def __init__(self, allocation: Allocation) -> None:
        self.allocation, self.users = allocation, 1


class _Owner:
    """The owner recorded with a foreign range (``_core.ranges`` names such ranges "foreign memory")."""

    __slots__ = ("entry",)
    foreign = True
    entry: _Entry


def register_foreign_memory(device: Any, address: int, size: int) -> ForeignMemory:
    """Make ``[address, address + size)`` of ``device`` (a flat device handle or an
    ``offload.objects.Device``) copyable and fillable by the core until ``release()``.

    The caller vouches that the range is live device memory of ``device`` for as long as it stays
    registered. INVALID_DEVICE for a dead or host device, INVALID_ARGUMENT / INVALID_SIZE for
    bad values, INVALID_ARGUMENT for a range that partly overlaps one already known.
    """
    handle = getattr(device, "handle", device)
    ctx = STATE.ctx
    if not isinstance(handle, DeviceHandle) or ctx is None or handle._ctx is not ctx:
        raise OffloadError(ErrorCode.INVALID_DEVICE, f"register_foreign_memory: {device!r} is no live device")
    start = as_address(address, "address")
    length = as_size(size, "size")
    if length == 0 or start == 0:
        raise OffloadError(ErrorCode.INVALID_SIZE if start else ErrorCode.INVALID_ARGUMENT,
                           f"register_foreign_memory: empty or NULL range ({start:#x}, {length})")  # fmt: skip
    end = end_of(start, length, "size")
    if handle.is_host or ctx.allocations.overlaps(start, end):
        return ForeignMemory(handle, start, end, ctx, None)  # host memory, or offload's own allocation
    registration = _register(handle, ctx, start, end)
    if registration is None:  # a released import of this memory may still be in its grace period
        _wait_for_released(ctx, start, end)
        registration = _register(handle, ctx, start, end)
    if registration is None:
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT,
            f"register_foreign_memory: [{start:#x}, {end:#x}) partly overlaps memory offload already knows",
        )
    return registration


def _register(handle: DeviceHandle, ctx: Any, start: int, end: int) -> ForeignMemory | None:
    """One try: a registration of [start, end), counted with a live one it lies in, or None when
    the range partly overlaps a known one (a retired one too)."""
    with _lock:
        known = ctx.globals.find(start)
        if known is not None and known.device is handle and known.end >= end and isinstance(known.owner, _Owner):
            entry = known.owner.entry
            entry.users += 1
            return ForeignMemory(handle, start, end, ctx, entry)
        if known is not None and known.device is handle and known.end >= end:
            return ForeignMemory(handle, start, end, ctx, None)  # inside a global variable
        owner = _Owner()
        allocation = Allocation(handle, None, start, end, owner)
        owner.entry = entry = _Entry(allocation)
        if not ctx.globals.insert(allocation):
            return None
    return ForeignMemory(handle, start, end, ctx, entry)


def _wait_for_released(ctx: Any, start: int, end: int, timeout: float = 5.0) -> None:
    """Wait (bounded) until no retired foreign range touches [start, end): a grace period ends
    once the copies in flight end, and those never wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = touching(ctx.globals.snapshot, start, end)
        if found is None or not found.retired or not getattr(found.owner, "foreign", False):
            return
        time.sleep(0.0005)


def _live_device(device: Any, what: str) -> DeviceHandle:
    handle = getattr(device, "handle", device)
    if not isinstance(handle, DeviceHandle) or handle._ctx is None or handle._ctx is not STATE.ctx:
        raise OffloadError(ErrorCode.INVALID_DEVICE, f"{what}: {device!r} is no live device")
    return handle


def _stream(stream: Any, what: str) -> int:
    if isinstance(stream, bool) or not isinstance(stream, int) or not 0 <= stream < 2**64:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what}: stream must be a driver stream handle (int), got {stream!r}")
    return stream


def foreign_stream_wait(stream: int, event: Any) -> None:
    """Make another library's driver stream ``stream`` wait for ``event`` (a flat event handle or
    an ``offload.objects.Event``) on the device, without blocking the host (the event's backend's
    ``foreign_stream_wait`` hook; UNSUPPORTED without it)."""
    handle = getattr(event, "handle", event)
    if not isinstance(handle, EventHandle) or handle._ctx is None or handle._ctx is not STATE.ctx:
        raise OffloadError(ErrorCode.INVALID_EVENT, f"foreign_stream_wait: {event!r} is no live event")
    device = handle.device
    try:
        device.backend.foreign_stream_wait(device.native, _stream(stream, "foreign_stream_wait"), handle.native)
    except Exception as exc:
        raise as_offload_error(exc, f"{device.platform.name}: foreign_stream_wait")


def foreign_stream_sync(device: Any, stream: int) -> None:
    """Block until another library's driver stream ``stream`` of ``device`` has finished its work."""
    handle = _live_device(device, "foreign_stream_sync")
    try:
        handle.backend.foreign_stream_sync(handle.native, _stream(stream, "foreign_stream_sync"))
    except Exception as exc:
        raise as_offload_error(exc, f"{handle.platform.name}: foreign_stream_sync")
