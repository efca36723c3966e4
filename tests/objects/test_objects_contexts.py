"""Contexts in the object layer (issue 17): ``Context`` objects made from devices or platforms,
buffers, arrays, queues and programs made in them, freed by their context's ownership rules; a
context that still owns something cannot be closed (the flat API's INVALID_CONTEXT); pinned and
aligned buffers."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import offload
from offload import AllocType, ContextInfo, ErrorCode, MemInfo, OffloadError, QueueInfo
from offload.objects import Context

from objects_support import SAXPY_SIGNATURE, release_library


def test_default_context(device: offload.objects.Device) -> None:
    ctx = device.default_context
    assert ctx is device.platform.default_context and ctx.is_default
    assert ctx.devices == device.platform.devices and ctx.platform == device.platform
    assert ctx.info(ContextInfo.NUM_DEVICES) == len(device.platform.devices)
    with device.alloc(16) as buffer, device.queue() as queue:
        assert buffer.context is ctx and queue.context is ctx
        assert offload.olGetQueueInfo(queue.handle, QueueInfo.CONTEXT) is ctx.handle
    with pytest.raises(OffloadError) as info:
        ctx.close()
    assert info.value.code is ErrorCode.INVALID_CONTEXT and "default context" in info.value.details
    assert not ctx.closed
    assert offload.Buffer.wrap(0, 0, device, "device").context is None  # memory owned elsewhere


def test_objects_made_in_a_context_and_its_ownership(device: offload.objects.Device) -> None:
    ctx = device.platform.create_context([device])
    assert not ctx.is_default and ctx.devices == [device] and ctx.info(ContextInfo.DEVICES) == [device.handle]
    buffer = ctx.alloc(64)
    array = ctx.to_device(np.arange(8, dtype=np.float32))
    queue = ctx.queue()
    assert buffer.context is ctx and array.buffer.context is ctx and queue.context is ctx
    assert buffer.device == device and queue.device == device
    assert offload.olGetQueueInfo(queue.handle, QueueInfo.CONTEXT) is ctx.handle
    assert offload.olGetMemInfo(buffer.address, MemInfo.SIZE, ctx.handle) == 64
    other = Context(device)
    with pytest.raises(OffloadError) as info:
        offload.olMemFree(buffer.address, other.handle)  # not its context
    assert info.value.code is ErrorCode.INVALID_CONTEXT
    other.close()

    out = ctx.empty(8, "float32")
    queue.copy(out, array)
    queue.sync()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(8, dtype=np.float32))

    with pytest.raises(OffloadError) as info:
        ctx.close()  # it still owns them: the flat API says what
    assert info.value.code is ErrorCode.INVALID_CONTEXT
    assert "4 allocation(s)" not in info.value.details and "3 allocation(s)" in info.value.details
    assert "1 queue(s)" in info.value.details and not ctx.closed
    for owned in (buffer, array.buffer, out.buffer, queue):
        owned.close()
    ctx.close()
    assert ctx.closed
    ctx.close()  # idempotent
    with pytest.raises(OffloadError) as info:
        ctx.alloc(8)
    assert info.value.code is ErrorCode.INVALID_CONTEXT


def test_with_block(device: offload.objects.Device) -> None:
    with Context([device]) as ctx, ctx.alloc(8) as buffer:
        buffer.copy_from(b"12345678")
        assert buffer.to_bytes() == b"12345678"
    assert ctx.closed
    with pytest.raises(ZeroDivisionError):  # the block's own error, not the context's refusal
        with Context([device]) as ctx:
            kept = ctx.alloc(8)
            1 / 0
    assert not ctx.closed
    kept.close()
    ctx.close()


def test_a_program_in_a_context(host: offload.objects.Device, saxpy_image: bytes) -> None:
    with Context([host]) as ctx:
        program = ctx.load_program(saxpy_image)
        assert program.context is ctx
        x, y = ctx.to_device(np.ones(4, np.float32)), ctx.to_device(np.zeros(4, np.float32))
        with ctx.queue() as queue:
            queue.launch(program.kernel("saxpy", SAXPY_SIGNATURE), 1, 4, 3.0, x, y, 4)
        np.testing.assert_array_equal(y.to_numpy(), np.full(4, 3, np.float32))
        with pytest.raises(OffloadError, match=r"1 program\(s\)"):
            x.buffer.close(), y.buffer.close(), ctx.close()
        program.close()
    assert ctx.closed and host.load_program(saxpy_image).context is host.default_context


def test_pinned_and_aligned_buffers(device: offload.objects.Device) -> None:
    with Context([device]) as ctx:
        pinned = ctx.alloc(100, kind="host")
        assert pinned.kind is AllocType.HOST and pinned.host_accessible
        assert offload.olGetMemInfo(pinned.address, MemInfo.TYPE) is AllocType.HOST
        try:
            aligned = ctx.alloc(100, kind="host", alignment=4096)
        except OffloadError as error:  # a device that cannot give it says so, naming itself
            assert error.code is ErrorCode.UNSUPPORTED and device.handle.platform.name in error.details
        else:
            assert aligned.address % 4096 == 0 and aligned.context is ctx
            aligned.close()
        managed = device.alloc(64, "managed", alignment=64) if device.is_host else None
        if managed is not None:
            assert managed.address % 64 == 0
            with device.queue() as queue:
                managed.prefetch(queue)
                managed.prefetch(queue, to_host=True)
            managed.close()
        pinned.close()


def test_pinned_buffers_at_api_level_main() -> None:
    """olMemAlloc(HOST) is refused at level main: a host Buffer is olMemAllocHost at both levels."""
    offload.olInit(offload.InitArgs(api_level="main"))
    try:
        device = offload.devices("host")[0]
        with offload.Buffer(64, device, "host") as buffer, Context(device) as ctx, ctx.alloc(32, kind="host") as owned:
            assert buffer.kind is AllocType.HOST and owned.context is ctx
            buffer.copy_from(bytes(range(64)))
            assert buffer.to_bytes() == bytes(range(64))
    finally:
        release_library()


def test_bad_contexts_are_named(device: offload.objects.Device, host: offload.objects.Device) -> None:
    with pytest.raises(OffloadError) as info:
        Context([])
    assert info.value.code is ErrorCode.INVALID_SIZE
    with pytest.raises(OffloadError) as info:
        Context(3)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "got 3" in info.value.details
    with pytest.raises(OffloadError) as info:
        Context([3])  # type: ignore[list-item]
    assert info.value.code is ErrorCode.INVALID_DEVICE
    with pytest.raises(OffloadError) as info:
        offload.Buffer(8, device, context="ctx")
    assert info.value.code is ErrorCode.INVALID_CONTEXT and "'ctx'" in info.value.details
    if device.platform != host.platform:
        with pytest.raises(OffloadError) as info:
            Context([device, host])
        assert info.value.code is ErrorCode.INVALID_DEVICE
        with Context(device) as ctx, pytest.raises(OffloadError) as info:
            ctx.alloc(8, host)  # not a device of the context
        assert info.value.code is ErrorCode.INVALID_DEVICE


def test_the_collector_destroys_a_context_after_its_objects(device: offload.objects.Device) -> None:
    ctx = Context([device])
    handle = ctx.handle
    cycle: list[object] = [ctx, ctx.alloc(16), ctx.queue()]
    cycle.append(cycle)
    del ctx, cycle
    gc.collect()
    with pytest.raises(OffloadError) as info:
        offload.olGetContextInfo(handle, ContextInfo.NUM_DEVICES)
    assert info.value.code is ErrorCode.INVALID_CONTEXT and "destroyed" in info.value.details
