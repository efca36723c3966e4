"""The contract's hooks for other libraries' streams (DLPack, ``__cuda_array_interface__``,
``__cuda_stream__``) (``offload.hookspecs`` re-exports them)."""

from __future__ import annotations

from .._values.opaque import NativeDevice, NativeEvent, NativeQueue
from ._markers import hookspec


# --- other libraries' streams (DLPack, __cuda_array_interface__) ------------------------------


@hookspec
def foreign_stream_wait(device: NativeDevice, stream: int, event: NativeEvent) -> None:
    """Make the driver stream ``stream`` (a raw handle another library owns, as DLPack's
    ``__dlpack__(stream=...)`` passes it) wait for ``event`` (of this device) without blocking
    the host. Optional (absent: ``offload.foreign_stream_wait`` answers ``UNSUPPORTED`` and the
    object layer synchronises the device's queues instead)."""


@hookspec
def foreign_stream_sync(device: NativeDevice, stream: int) -> None:
    """Block until everything enqueued so far on the driver stream ``stream`` (another library's,
    as ``__cuda_array_interface__``'s ``stream`` names it) has finished. Optional."""


@hookspec
def queue_stream(device: NativeDevice, queue: NativeQueue) -> int:
    """The driver stream under ``queue`` (made by ``create_queue`` or ``adopt_stream``) as an int
    (a ``CUstream`` / ``hipStream_t`` address), for another library to enqueue work on in the
    queue's order (``offload.queue_stream``, ``Queue.__cuda_stream__``). Optional, with
    ``adopt_stream``."""


@hookspec
def adopt_stream(device: NativeDevice, stream: int) -> NativeQueue:
    """A queue over ``stream``, a driver stream of ``device`` that another library made and owns
    (an int handle, as ``__cuda_stream__`` gives it; the legacy default stream's too). Every queue
    hook then takes it like one of ``create_queue``: offload's work goes on that stream, in order
    with the owner's, and ``has_pending_work`` / ``synchronize`` see the owner's work too.
    ``synchronize(release=True)`` ends only what the backend made for it (host-function state, its
    native record), never the stream; the core never reuses an adopted queue for ``olCreateQueue``.
    ``INVALID_ARGUMENT`` for a handle the driver does not know as a stream of ``device``'s context.
    Optional, with ``queue_stream``."""
