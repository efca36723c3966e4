"""What DLPack and the CUDA array interface need beyond the array itself: ordering
a consumer's stream after the layer's queued work (an event per queue, waited on by that stream;
a synchronisation where the backend cannot), and the ``__cuda_array_interface__`` dictionary.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._api.sessions import foreign_stream_wait

CAI_VERSION = 3


def consumer_stream(device_type_is_cuda: bool, stream: Any) -> int:
    """DLPack's ``stream`` as a driver handle: None is the legacy default stream on CUDA (1) and
    the null stream on ROCm (0); CUDA's 0 is ambiguous and refused, as the DLPack spec says."""
    if stream is None:
        return 1 if device_type_is_cuda else 0
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise BufferError(f"stream must be None, -1 or a stream handle (int), got {stream!r}")
    if stream == 0 and device_type_is_cuda:
        raise BufferError("stream=0 is ambiguous on CUDA (DLPack): pass 1 (legacy default), 2 (per-thread) or a stream")
    return stream


def order_before(stream: int, queues: Iterable[Any]) -> None:
    """Make the driver stream ``stream`` wait for the work queued so far on ``queues`` (the layer's
    queues of the exporting device): an event recorded on each, waited on by the stream without
    blocking the host; a queue whose backend cannot make a foreign stream wait is synchronised."""
    for queue in queues:
        if queue.closed:
            continue
        event = queue.record()
        try:
            foreign_stream_wait(stream, event.handle)
        except OffloadError as error:
            if error.code is not ErrorCode.UNSUPPORTED:
                raise
            queue.sync()


def cuda_array_interface(address: int, shape: tuple[int, ...], typestr: str, strides: tuple[int, ...] | None,
                         readonly: bool) -> dict[str, Any]:  # fmt: skip
    """Version 3 of the CUDA array interface; ``stream`` None: the producer's work is finished."""
    return {
        "shape": shape,
        "typestr": typestr,
        "data": (address, readonly),
        "version": CAI_VERSION,
        "strides": strides,
        "descr": [("", typestr)],
        "stream": None,
    }
