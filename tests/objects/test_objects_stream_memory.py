"""The object layer's stream-ordered Buffers (issue 32, part 3): ``device.alloc(size, queue=q)``
and ``buffer.close(q)`` over olMemAllocAsync / olMemFreeAsync, on every platform here."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol


def test_buffers_allocated_and_freed_on_a_queue(device: ol.objects.Device) -> None:
    dev = device
    with dev.queue() as q:
        b = dev.alloc(4096, queue=q)
        b.fill(b"\x05", queue=q)
        out = np.zeros(4096, np.uint8)
        b.copy_to(out, queue=q)
        address = b.address
        b.close(q)
        assert b.closed
        with pytest.raises(ol.OffloadError):  # refused at once (its address is retired)
            ol.olMemFill(None, address, b"\x01", 4)
        with pytest.raises(ol.OffloadError):
            b.fill(b"\x01", queue=q)
        q.sync()
        assert (out == 5).all()
        again = ol.objects.Buffer(4096, queue=q)  # the queue's device by default
        assert again.address == address and again.device is dev
        again.close()
        with pytest.raises(ol.OffloadError) as refused:
            dev.alloc(64, "host", queue=q)
        assert refused.value.code is ol.ErrorCode.UNSUPPORTED
        with pytest.raises(ol.OffloadError) as wrong:
            dev.alloc(64, queue=q, alignment=64)
        assert wrong.value.code is ol.ErrorCode.INVALID_ARGUMENT
        with pytest.raises(ol.OffloadError) as not_a_queue:
            dev.alloc(64).close(queue="q")  # type: ignore[arg-type]
        assert not_a_queue.value.code is ol.ErrorCode.INVALID_QUEUE
