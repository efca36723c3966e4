"""The remembered launch (``Kernel._memo``, issue 18): ``Queue.launch`` and ``Kernel.launch``
reuse the last (and the one before) packed argument buffer when the arguments compare equal,
Buffers and Arrays by identity and scalars by value within one class. Whatever is reused, a
launch must do exactly what packing the arguments afresh does: the same bytes reach the kernel,
and every argument the packer refuses is refused."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import offload
from offload import ErrorCode, OffloadError

from objects_support import SAXPY_SIGNATURE, echoed as _echoed, relaunched


@pytest.mark.parametrize("on_queue", [False, True])
def test_values_equal_across_types_are_checked_again(echo: offload.Kernel, host: offload.objects.Device, on_queue: bool) -> None:
    with host.alloc(16) as out, host.queue() as queue:
        def launch(*args: object) -> None:
            if on_queue:
                queue.launch(echo, 1, 1, *args)
                queue.sync()
            else:
                echo.launch(1, 1, *args)

        launch(1.5, 7, out)
        assert _echoed(out) == (struct.pack("=f", 1.5), 7)
        for wrong in (7.0, np.float64(7.0), np.array([7])):  # equal to 7, but not an integer
            with pytest.raises(OffloadError) as info:
                launch(1.5, wrong, out)
            assert info.value.code is ErrorCode.INVALID_ARGUMENT and "parameter 'n'" in info.value.details
        with pytest.raises(OffloadError, match=r"parameter 'out'.*got a ndarray"):
            launch(1.5, 7, np.zeros(16, np.uint8))  # numpy's == on the remembered Buffer is never asked
        launch(1.5, int("7"), out)  # another int object of the same value: the same bytes
        assert _echoed(out) == (struct.pack("=f", 1.5), 7)


def test_the_sign_of_zero_reaches_the_kernel(echo: offload.Kernel, host: offload.objects.Device) -> None:
    with host.alloc(16) as out:
        for value in (0.0, -0.0, 0.0, -0.0):  # 0.0 == -0.0, but they pack apart
            echo.launch(1, 1, value, 1, out)
            assert _echoed(out)[0] == struct.pack("=f", value)


@pytest.mark.parametrize("on_queue", [False, True])
def test_buffers_used_in_turn(host: offload.objects.Device, saxpy_image: bytes, on_queue: bool) -> None:
    """Ping-pong between two argument sets: both are remembered, each launch gets its own."""
    with host.load_program(saxpy_image) as program, host.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        a = offload.to_device(np.ones(8, np.float32), host)
        b = offload.to_device(np.zeros(8, np.float32), host)
        ha, hb = np.ones(8, np.float32), np.zeros(8, np.float32)
        for _ in range(5):
            for src, dst, hsrc, hdst in ((a, b, ha, hb), (b, a, hb, ha)):
                if on_queue:
                    queue.launch(saxpy, 1, 8, 2.0, src, dst, 8)
                else:
                    saxpy.launch(1, 8, 2.0, src, dst, 8)
                hdst += 2.0 * hsrc
        queue.sync()
        np.testing.assert_array_equal(a.to_numpy(), ha)
        np.testing.assert_array_equal(b.to_numpy(), hb)


def test_a_closed_buffer_of_the_earlier_launch_is_refused(host: offload.objects.Device, saxpy_image: bytes) -> None:
    with host.load_program(saxpy_image) as program:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        a, b, c = (offload.to_device(np.ones(4, np.float32), host) for _ in range(3))
        saxpy.launch(1, 4, 1.0, a, b, 4)
        saxpy.launch(1, 4, 1.0, a, c, 4)  # (a, b) is now the launch before the last
        b.buffer.close()
        with pytest.raises(OffloadError, match=r"parameter 'y' .*closed"):
            saxpy.launch(1, 4, 1.0, a, b, 4)


def test_a_queue_keeps_a_remembered_launchs_arguments_alive(host: offload.objects.Device, saxpy_image: bytes) -> None:
    import gc
    import weakref

    with host.load_program(saxpy_image) as program, host.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        x = offload.to_device(np.ones(4, np.float32), host)
        y = offload.to_device(np.zeros(4, np.float32), host)
        queue.launch(saxpy, 1, 4, 1.0, x, y, 4)
        queue.launch(saxpy, 1, 4, 1.0, x, y, 4)  # reused: the queue holds the remembered launch
        saxpy.launch(1, 4, 1.0, offload.to_device(np.ones(4, np.float32), host), y, 4)
        saxpy.launch(1, 4, 1.0, offload.to_device(np.ones(4, np.float32), host), y, 4)  # both memos replaced
        alive = weakref.ref(x.buffer)
        del x
        gc.collect()
        assert alive() is not None, "the queue's work still needs x"
        queue.sync()
        gc.collect()
        assert alive() is None


def test_buffers_and_arrays_compare_by_identity(host: offload.objects.Device) -> None:
    with host.alloc(8) as buffer:
        view = buffer.view(np.float32)
        host_copy = np.zeros(2, np.float32)
        assert buffer == buffer and view == view
        assert buffer != buffer.view() and view != buffer.view(np.float32)
        assert (view == host_copy) is False  # never numpy's elementwise compare of device memory
        assert len({buffer, view, buffer}) == 2


# --- copies in one frame (Buffer and contiguous Array on both sides): every edge still checked ---


def test_copies_between_views_and_buffers(device: offload.objects.Device) -> None:
    base = offload.to_device(np.arange(8, dtype=np.int32), device)
    small = offload.to_device(np.array([-1, -2], np.int32), device)
    window = base.buffer.view(np.int32, 2, offset=8)  # base[2:4]
    with device.queue() as queue:
        queue.copy(window, small)
        queue.sync()
        np.testing.assert_array_equal(base.to_numpy(), [0, 1, -1, -2, 4, 5, 6, 7])  # only the window's bytes
        window.copy_from(offload.to_device(np.array([9, 9], np.int32), device), queue=queue)
        queue.sync()
        np.testing.assert_array_equal(base.to_numpy(), [0, 1, 9, 9, 4, 5, 6, 7])
        with pytest.raises(OffloadError, match=r"src has 32 bytes, dst only 8"):
            queue.copy(base.buffer.view(np.int32, 2), base)  # the view, not its buffer, bounds the copy
        with pytest.raises(OffloadError, match=r"src has 32 bytes, dst only 8"):
            queue.copy(small.buffer, base.buffer)
        with pytest.raises(OffloadError, match="does not match"):
            window.copy_from(base)
        closed = offload.to_device(np.zeros(2, np.int32), device)
        closed.buffer.close()
        with pytest.raises(OffloadError, match="closed"):
            queue.copy(window, closed)
        with pytest.raises(OffloadError, match="closed"):
            window.copy_from(closed, queue=queue)
        readonly = offload.Array(offload.Buffer.wrap(base.address, 8, device, "device", readonly=True), 2, np.int32)
        with pytest.raises(OffloadError, match="read-only"):
            queue.copy(readonly, small)
        with pytest.raises(OffloadError, match="read-only"):
            readonly.copy_from(small)


@pytest.mark.parametrize("on_queue", [False, True])
def test_a_grid_list_changed_in_place_is_read_again(host: offload.objects.Device, saxpy_image: bytes, on_queue: bool) -> None:
    with host.load_program(saxpy_image) as program, host.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        x, y = offload.to_device(np.ones(8, np.float32), host), offload.to_device(np.zeros(8, np.float32), host)
        grid, block = [1], [4]
        before = relaunched()
        for groups in (1, 1, 2):
            grid[0] = groups  # the same list object, another grid
            if on_queue:
                queue.launch(saxpy, grid, block, 1.0, x, y, 8)
                queue.sync()
            else:
                saxpy.launch(grid, block, 1.0, x, y, 8)
        assert relaunched() == before  # nor by the compiled memo
        np.testing.assert_array_equal(y.to_numpy(), [3, 3, 3, 3, 1, 1, 1, 1])
