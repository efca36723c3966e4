"""Buffer: one allocation per object, freed by close(), with or the GC; copies with numpy, any
buffer-protocol object and other buffers, synchronously or on a queue."""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable

import numpy as np
import pytest

import offload
from offload import AllocType, ErrorCode, MemInfo, OffloadError

KINDS = list(AllocType)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_buffer_owns_one_allocation(device: offload.objects.Device, kind: AllocType, live_allocations: Callable[[], int]) -> None:
    buffer = offload.Buffer(np.int64(256), device, kind)  # numpy integers are sizes too
    assert (buffer.size, buffer.nbytes, buffer.device, buffer.kind) == (256, 256, device, kind)
    assert buffer.owns_memory and not buffer.closed
    assert buffer.__offload_ptr__ == buffer.address != 0
    assert offload.olGetMemInfo(buffer.address, MemInfo.SIZE) == 256
    assert offload.olGetMemInfo(buffer.address, MemInfo.TYPE) is kind
    assert offload.olGetMemInfo(buffer.address, MemInfo.DEVICE) is device.handle
    assert live_allocations() == 1
    buffer.close()
    assert buffer.closed and live_allocations() == 0
    buffer.close()  # idempotent
    with pytest.raises(OffloadError) as info:
        buffer.address
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "closed" in str(info.value)


def test_with_and_gc_release(device: offload.objects.Device, live_allocations: Callable[[], int]) -> None:
    with device.alloc(64) as buffer:
        assert live_allocations() == 1
    assert buffer.closed and live_allocations() == 0
    buffers = [offload.Buffer(32, device) for _ in range(100)]
    assert live_allocations() == 100
    del buffers
    gc.collect()
    assert live_allocations() == 0


def test_flat_free_then_gc_is_silent(device: offload.objects.Device, live_allocations: Callable[[], int]) -> None:
    buffer = device.alloc(64)
    offload.olMemFree(buffer.address)  # the flat API freed it behind the object's back
    del buffer
    gc.collect()
    assert live_allocations() == 0


def test_bad_sizes_are_named() -> None:
    for size, code in ((0, ErrorCode.INVALID_SIZE), (-1, ErrorCode.INVALID_SIZE), (1.5, ErrorCode.INVALID_SIZE)):
        with pytest.raises(OffloadError) as info:
            offload.Buffer(size)  # type: ignore[arg-type]
        assert info.value.code is code


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_round_trips_with_numpy_and_buffer_protocol(device: offload.objects.Device, kind: AllocType) -> None:
    data = np.arange(64, dtype=np.float64)
    with offload.Buffer(data.nbytes, device, kind) as buffer:
        buffer.copy_from(data)
        out = np.zeros_like(data)
        buffer.copy_to(out)
        np.testing.assert_array_equal(out, data)
        assert buffer.to_bytes() == data.tobytes()
        buffer.copy_from(b"\x01\x02\x03\x04", offset=8)
        view = bytearray(4)
        buffer.copy_to(view, offset=8)
        assert view == b"\x01\x02\x03\x04"
        buffer.copy_from(memoryview(bytearray(b"\xff" * 8)))
        assert buffer.to_bytes()[:8] == b"\xff" * 8
        ctypes_array = (ctypes.c_uint8 * 16)()
        buffer.copy_to(ctypes_array)
        assert bytes(ctypes_array)[:8] == b"\xff" * 8


def test_buffer_to_buffer_and_on_a_queue(device: offload.objects.Device) -> None:
    data = np.arange(1000, dtype=np.int32)
    with device.alloc(data.nbytes) as a, device.alloc(data.nbytes, AllocType.HOST) as b, device.queue() as queue:
        a.copy_from(data, queue=queue)
        b.copy_from(a, queue=queue)
        out = np.empty_like(data)
        b.copy_to(out, queue=queue)
        queue.sync()
        np.testing.assert_array_equal(out, data)


def test_buffer_to_buffer_offsets_and_errors(device: offload.objects.Device) -> None:
    """Copies between two Buffers (the inline common case) with offsets both ways, and every case
    it leaves to the general path: overruns, a negative offset, read-only and closed memory."""
    data = np.arange(16, dtype=np.int32)
    with device.alloc(64) as big, device.alloc(16, AllocType.HOST) as small, device.queue() as queue:
        big.copy_from(data)
        big.copy_to(small, offset=16)  # bytes 16..32 of big: elements 4..7
        assert np.frombuffer(small.to_bytes(), np.int32).tolist() == [4, 5, 6, 7]
        big.copy_from(small, offset=48, queue=queue)  # into the last 16 bytes, enqueued
        queue.sync()
        assert np.frombuffer(big.to_bytes(), np.int32).tolist() == [*range(12), 4, 5, 6, 7]
        with pytest.raises(OffloadError, match="overruns"):
            small.copy_from(big)  # 64 bytes into 16
        with pytest.raises(OffloadError, match="overruns"):
            big.copy_from(small, offset=56)
        with pytest.raises(OffloadError, match="overruns"):
            big.copy_to(small, offset=52)
        with pytest.raises(OffloadError, match="must be non-negative"):
            big.copy_from(small, offset=-4)
        readonly = offload.Buffer.wrap(small.address, 16, device, AllocType.HOST, small, readonly=True,
                                       session=small._ctx)
        with pytest.raises(OffloadError, match="read-only"):
            readonly.copy_from(small, queue=queue)
        with pytest.raises(OffloadError, match="read-only"):
            big.copy_to(readonly)
        gone = device.alloc(16)
        gone.close()
        with pytest.raises(OffloadError, match="closed"):
            big.copy_from(gone)
        with pytest.raises(OffloadError, match="closed"):
            gone.copy_to(small, queue=queue)
        queue.sync()


def test_queue_keeps_host_memory_alive_until_sync(device: offload.objects.Device) -> None:
    with device.alloc(1 << 20) as buffer, device.queue() as queue:
        queue.copy(buffer, np.full(1 << 18, 7, np.int32))  # a temporary: the queue holds it
        gc.collect()
        queue.sync()
        assert np.frombuffer(buffer.to_bytes(), np.int32).tolist() == [7] * (1 << 18)


def test_copy_errors_are_named(device: offload.objects.Device) -> None:
    with device.alloc(16) as buffer:
        with pytest.raises(OffloadError, match="overruns"):
            buffer.copy_from(bytes(32))
        with pytest.raises(OffloadError, match="overruns"):
            buffer.copy_to(bytearray(8), offset=12)
        with pytest.raises(OffloadError, match="read-only"):
            buffer.copy_to(b"12345678")
        with pytest.raises(OffloadError, match="C-contiguous"):
            buffer.copy_from(np.arange(8, dtype=np.int16)[::2])
        with pytest.raises(OffloadError, match="buffer protocol") as info:
            buffer.copy_from(3)
        assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_fill(device: offload.objects.Device) -> None:
    with device.alloc(64) as buffer:
        buffer.fill(np.float32(1.5))
        assert np.frombuffer(buffer.to_bytes(), np.float32).tolist() == [1.5] * 16
        with device.queue() as queue:
            queue.fill(buffer, b"\xab")
        assert buffer.to_bytes() == b"\xab" * 64
        with pytest.raises(OffloadError, match="pattern"):
            buffer.fill(object())


def test_wrap_does_not_own(host: offload.objects.Device, live_allocations: Callable[[], int]) -> None:
    backing = np.arange(16, dtype=np.uint8)
    view = offload.Buffer.wrap(backing.ctypes.data, 16, host, AllocType.HOST, owner=backing)
    assert not view.owns_memory and live_allocations() == 0
    assert view.to_bytes() == bytes(range(16))
    view.close()
    assert view.closed and backing.sum() == sum(range(16))


def test_flat_calls_take_the_address(device: offload.objects.Device) -> None:
    with device.alloc(8) as buffer:
        offload.olMemFill(None, buffer.address, b"\x05", 8)
        assert buffer.to_bytes() == b"\x05" * 8


def test_flat_calls_take_buffers_even_temporary_ones(device: offload.objects.Device) -> None:
    """Where an address is meant, the flat API takes Buffers and Arrays (``__offload_ptr__``);
    a temporary one must stay allocated until the call returns (not be freed mid-call)."""
    with device.alloc(16) as dst:
        offload.olMemFill(None, dst, b"\x01", 16)  # type: ignore[arg-type]  (a failure here is a regression)
        assert dst.to_bytes() == b"\x01" * 16
        for _ in range(20):
            src = np.arange(16, dtype=np.uint8)
            offload.olMemcpy(None, dst, device.handle, offload.to_device(src, device), device.handle, 16)
            assert dst.to_bytes() == src.tobytes()


@pytest.mark.parametrize("alignment", [64, 4096])
def test_aligned_buffers(device: offload.objects.Device, alignment: int) -> None:
    """Buffer(alignment=...): olMemAllocAligned(Host) (issue 17); UNSUPPORTED names the alignment."""
    for kind in (AllocType.DEVICE, AllocType.HOST):
        try:
            buffer = offload.Buffer(100, device, kind, alignment=alignment)
        except OffloadError as exc:
            assert exc.code is ErrorCode.UNSUPPORTED and str(alignment) in exc.details
            continue
        with buffer:
            assert buffer.address % alignment == 0 and buffer.size == 100
            assert offload.olGetMemInfo(buffer.address, MemInfo.TYPE) is kind


def test_prefetch_is_a_hint(device: offload.objects.Device) -> None:
    queue = device.queue()
    with offload.Buffer(64, device, AllocType.MANAGED) as buffer:
        buffer.copy_from(bytes(range(64)))
        buffer.prefetch(queue)
        buffer.prefetch(queue, to_host=True)
        queue.sync()
        assert buffer.to_bytes() == bytes(range(64))
