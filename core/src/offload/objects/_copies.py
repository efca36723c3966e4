"""The layer's copy decision, made once (``fast_copy``: the common case, whose verdict C
replays), and the endpoints of every other copy (``endpoint``: a Buffer, a contiguous Array or
host memory, checked and named)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._api.flat import olMemcpy
from .._api.sessions import session_cell
from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from ._discovery import Device, host_device
from ._hostbuf import host_span
from ._makers import MAKERS
from ._records import ACTIVE, STAMPS, publish_copy

if TYPE_CHECKING:
    from ._buffer import Buffer
    from ._queue import Queue

_STATE = session_cell()


def fast_copy(
    dst: Buffer, dst_offset: int, src: Buffer, src_offset: int, nbytes: int, queue: Queue | None, keep: tuple[Any, Any],
    verdict: tuple[Any, int, tuple[Any, ...]],
) -> bool:
    """The layer's copy decision, made once: the copy between two live Buffers of the current
    session, in bounds, into writable memory, in one frame: True when done, False (nothing done)
    for every other case, which the general path then checks and names. Enqueued, ``keep`` (the
    source and destination objects) is held until the queue's sync. Where C replays
    (``_records.ACTIVE``), the call ``verdict`` names (``(destination, kind, arguments)``) is
    recorded as making this very copy (``publish_copy``). (The callers check what the bounds of a
    view within a Buffer ask.)"""
    seen = STAMPS.closes if ACTIVE else -1  # (before deciding: a close meanwhile kills the verdict)
    ctx = _STATE.ctx
    if (
        ctx is None or dst._ctx is not ctx or src._ctx is not ctx or dst._readonly or not nbytes
        or not dst._address or not src._address or dst_offset < 0 or src_offset < 0
        or dst_offset + nbytes > dst._size or src_offset + nbytes > src._size
    ):
        return False
    handle = inflight = None
    if queue is not None:
        try:
            handle, inflight = queue._handle, queue._inflight
        except AttributeError:  # not a Queue: the general path names it (memcpy)
            return False
    to, dst_device, source, src_device = dst._address + dst_offset, dst._device._handle, src._address + src_offset, src._device._handle
    olMemcpy(handle, to, dst_device, source, src_device, nbytes)
    if inflight is not None:
        inflight.append(keep)
    if seen >= 0:
        publish_copy(verdict[0], verdict[1], verdict[2], (olMemcpy, handle, to, dst_device, source, src_device, nbytes), seen)
    return True


def endpoint(obj: Any, writable: bool, what: str) -> tuple[int, int, Device, Any]:
    """``(address, nbytes, device, keepalive)`` of a copy's source or destination."""
    if isinstance(obj, MAKERS.buffer):
        return (obj.writable_address(what) if writable else obj.address), obj._size, obj._device, obj
    if isinstance(obj, MAKERS.array):
        if not obj.is_contiguous:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what} must be a C-contiguous Array")
        if writable:
            obj.buffer.writable_address(what)
        return obj.address, obj.nbytes, obj.device, obj
    address, nbytes, keep = host_span(obj, writable, what)
    return address, nbytes, host_device(), keep
