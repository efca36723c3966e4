"""Queues and other libraries' streams, both ways: a queue's driver stream handed out
(``queue_stream``, behind ``Queue.__cuda_stream__``) and another library's stream taken in as a
queue (``adopt_stream``), for the backends with the ``queue_stream`` / ``adopt_stream`` hooks.

An adopted queue is a queue of the flat API like any other (launches, copies, fills, events, host
functions, ``olSyncQueue``, ``olDestroyQueue``), with what offload cannot give on a stream it does
not own: the stream is never destroyed nor reused for another queue (a busy destroyed one is held
until idle, then let go); ``olSyncQueue``, ``olQueryQueue`` and the waits of ``olMemFree`` and
``olShutDown`` cover the owner's work on the stream too; its flags (blocking or not with the
legacy default stream, its priority) are the owner's; and the owner must keep the stream alive
until the queue is destroyed.
"""

from __future__ import annotations

from typing import Any

from .queues import adopt_queue
from .._values.enums import ErrorCode
from .._values.errors import OffloadError, as_offload_error
from .._core.handles import Context as ContextHandle
from .._core.handles import Device as DeviceHandle
from .._core.handles import Queue as QueueHandle
from .._core.session import STATE

__all__ = ["adopt_stream", "queue_stream", "stream_handle"]


def stream_handle(stream: Any, what: str) -> int:
    """A stream as an int handle: an int, or an object with ``__cuda_stream__`` (version 0)."""
    protocol = getattr(type(stream), "__cuda_stream__", None)
    if protocol is not None:
        try:
            version, handle = protocol(stream)
        except Exception as exc:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what}: {stream!r}.__cuda_stream__() failed: {exc}") from exc
        if version != 0:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT,
                               f"{what}: __cuda_stream__ protocol version {version!r} (only 0 is known)")  # fmt: skip
        stream = handle
    if isinstance(stream, bool) or not isinstance(stream, int) or not 0 <= stream < 2**64:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT,
                           f"{what}: stream must be a driver stream handle (int) or have __cuda_stream__, got {stream!r}")  # fmt: skip
    return stream


def adopt_stream(device: Any, stream: Any, context: Any = None) -> QueueHandle:
    """A flat queue handle over ``stream`` (another library's driver stream of ``device``: an int
    handle or an object with ``__cuda_stream__``), in ``context`` (default: the platform's).
    ``olDestroyQueue`` ends it without destroying the stream (the module docstring lists what
    else differs). INVALID_DEVICE for a dead device, INVALID_ARGUMENT for a handle that is not a
    stream of the device, UNSUPPORTED for a backend without ``adopt_stream``."""
    handle = getattr(device, "handle", device)  # an offload.objects.Device carries its handle
    ctx = STATE.ctx
    if not isinstance(handle, DeviceHandle) or ctx is None or handle._ctx is not ctx:
        raise OffloadError(ErrorCode.INVALID_DEVICE, f"adopt_stream: {device!r} is no live device")
    owner = getattr(context, "handle", context)
    if owner is not None and (owner.__class__ is not ContextHandle or owner._ctx is not ctx):
        raise OffloadError(ErrorCode.INVALID_CONTEXT, f"adopt_stream: {context!r} is no live context")
    raw = stream_handle(stream, "adopt_stream")
    calls = ctx.calls
    calls.append("adopt_stream")  # the final olShutDown waits for it, as for a generated call
    try:
        if STATE.ctx is not ctx:
            raise OffloadError(ErrorCode.UNINITIALIZED, "adopt_stream: the session ended")
        return adopt_queue(ctx, handle, raw, owner)
    except OffloadError:
        raise
    except Exception as exc:
        raise as_offload_error(exc, f"{handle.platform.name}: adopt_stream") from exc
    finally:
        calls.remove("adopt_stream")


def queue_stream(queue: Any) -> int:
    """The driver stream under ``queue`` (a flat queue handle or an ``offload.objects.Queue``) as
    an int, for another library to enqueue work on in the queue's order: work it enqueues there
    runs after offload's earlier work and before its later work. The stream stays offload's: valid
    until the queue is destroyed. INVALID_QUEUE for a dead queue, UNSUPPORTED for a backend
    without streams (the host, OpenCL)."""
    handle = getattr(queue, "handle", queue)
    if not isinstance(handle, QueueHandle) or handle._ctx is None or handle._ctx is not STATE.ctx:
        raise OffloadError(ErrorCode.INVALID_QUEUE, f"queue_stream: {queue!r} is no live queue")
    device = handle.device
    try:
        return int(device.backend.queue_stream(device.native, handle.native))
    except Exception as exc:
        raise as_offload_error(exc, f"{device.platform.name}: queue_stream") from exc
