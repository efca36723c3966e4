"""The compiled remembered launch (``offload.objects._launch_memo``, objects/_compiled_memo.py):
``Queue.launch`` and ``Kernel.launch`` relaunch the kernel's remembered launch in C where the
compiled path runs, and the C check refuses whatever the Python one refuses: each refused call
runs the Python code (the same bytes reach the kernel, the same errors). ``counts`` of the C
methods ({'fast', 'packed', 'deferred'}) tell which ran; under ``OFFLOAD_COMPILED=0`` the methods
are the Python functions and only the results are checked."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import offload
from offload import ErrorCode, OffloadError
from offload.objects import Kernel, Queue, _compiled_memo
from offload.objects._program import NO_MEMO

from objects_support import SAXPY_SIGNATURE, echoed, relaunched

needs_memo = pytest.mark.skipif(
    not _compiled_memo.ACTIVE, reason="the compiled memo is off here (OFFLOAD_COMPILED=0, or not built)"
)


def _launcher(kernel: offload.Kernel, queue: offload.objects.Queue, on_queue: bool, block: int = 1) -> Callable[..., None]:
    """``launch(*args)``: ``kernel`` over one group of ``block`` items, on ``queue`` (then a sync) or not."""

    def launch(*args: object) -> None:
        if on_queue:
            queue.launch(kernel, 1, block, *args)
            queue.sync()
        else:
            kernel.launch(1, block, *args)

    return launch


def test_the_methods_are_compiled_exactly_where_the_compiled_path_runs() -> None:
    for method in (Queue.launch, Kernel.launch):
        assert (type(method).__name__ == "Relauncher") is _compiled_memo.ACTIVE
        assert method.__name__ == "launch" and "packed" in (Kernel.launch.__doc__ or "") + (Queue.launch.__doc__ or "")
    probe = "from offload.objects import Queue, Kernel; print(type(Queue.launch).__name__, type(Kernel.launch).__name__)"
    unbuilt = "import sys; sys.modules['offload.objects._launch_memo'] = None; "  # as if built without a compiler
    for switch, code in (("0", probe), ("1", unbuilt + probe)):
        env = {**os.environ, "OFFLOAD_COMPILED": switch}
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout.split() == ["function", "function"], run.stdout + run.stderr


@needs_memo
@pytest.mark.parametrize("on_queue", [False, True])
def test_a_repeated_launch_is_relaunched_in_c(echo: offload.Kernel, host: offload.objects.Device, on_queue: bool) -> None:
    with host.alloc(16) as out, host.alloc(16) as other, host.queue() as queue:
        launch = _launcher(echo, queue, on_queue)
        before = relaunched()
        launch(1.5, 7, out)  # packed, remembered
        launch(1.5, int("7"), out)  # another int object of the same value
        assert relaunched() == before + 1 and echoed(out) == (struct.pack("=f", 1.5), 7)
        launch(2.5, 8, other)
        launch(1.5, 7, out)  # the launch before the last
        launch(2.5, 8, other)
        assert relaunched() == before + 3
        assert echoed(out) == (struct.pack("=f", 1.5), 7) and echoed(other) == (struct.pack("=f", 2.5), 8)


@pytest.mark.parametrize("on_queue", [False, True])
def test_the_compiled_memo_refuses_what_the_python_memo_refuses(
    echo: offload.Kernel, host: offload.objects.Device, on_queue: bool
) -> None:
    with host.alloc(16) as out, host.queue() as queue:
        launch = _launcher(echo, queue, on_queue)
        launch(1.0, 7, out)
        before = relaunched()
        with pytest.raises(OffloadError) as info:  # 7.0 == 7, but not an integer
            launch(1.0, 7.0, out)
        assert info.value.code is ErrorCode.INVALID_ARGUMENT and "parameter 'n'" in info.value.details
        assert relaunched() == before
        launch(1.0, 7, out)  # still the remembered launch
        assert relaunched() == before + _compiled_memo.ACTIVE
        launch(1, 7, out)  # 1 == 1.0: another class, packed again (as the float 1.0)
        assert echoed(out) == (struct.pack("=f", 1.0), 7)
        for value in (0.0, 0.0, -0.0, -0.0):  # 0.0 == -0.0, but they pack apart: never remembered
            launch(value, 7, out)
            assert echoed(out)[0] == struct.pack("=f", value)
        assert relaunched() == before + _compiled_memo.ACTIVE
        doomed = host.alloc(16)
        launch(3.0, 9, doomed)
        launch(3.0, 9, doomed)
        assert relaunched() == before + 2 * _compiled_memo.ACTIVE
        doomed.close()
        with pytest.raises(OffloadError, match=r"parameter 'out' .*closed"):
            launch(3.0, 9, doomed)
        assert relaunched() == before + 2 * _compiled_memo.ACTIVE


@pytest.mark.parametrize("on_queue", [False, True])
def test_a_buffer_closed_since_makes_the_compiled_memo_pack_again(
    host: offload.objects.Device, saxpy_image: bytes, on_queue: bool
) -> None:
    with host.load_program(saxpy_image) as program, host.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        x, y = offload.to_device(np.ones(4, np.float32), host), offload.to_device(np.zeros(4, np.float32), host)
        launch = _launcher(saxpy, queue, on_queue, block=4)
        launch(1.0, x, y, 4)
        launch(1.0, x, y, 4)
        before = relaunched()
        host.alloc(8).close()  # any Buffer closed: its address may come back in another one
        launch(1.0, x, y, 4)
        assert relaunched() == before
        launch(1.0, x, y, 4)
        assert relaunched() == before + _compiled_memo.ACTIVE
        np.testing.assert_array_equal(y.to_numpy(), [4, 4, 4, 4])


@needs_memo
def test_the_c_check_itself_refuses_a_zero(echo: offload.Kernel, host: offload.objects.Device) -> None:
    """A remembered launch holding 0.0 (which the packer never remembers, so the C check must not
    take -0.0 or another 0.0 for it): the arguments are packed again, and reach the kernel."""
    with host.alloc(16) as out:
        echo.launch(1, 1, 1.0, 7, out)
        remembered = echo._memo
        assert len(remembered) == 14 and remembered[0][2] is out
        for value in (-0.0, float("0")):  # (another 0.0 object: never compared by value)
            echo._memo, echo._memo_previous = ((float("0"), 7, out),) + remembered[1:], NO_MEMO  # its buffer holds 1.0
            before = dict(Kernel.launch.counts)  # type: ignore[attr-defined]
            echo.launch(1, 1, value, 7, out)
            assert Kernel.launch.counts == {**before, "packed": before["packed"] + 1}  # type: ignore[attr-defined]
            assert echoed(out) == (struct.pack("=f", value), 7)


@needs_memo
def test_the_c_methods_hand_other_calls_on(echo: offload.Kernel, host: offload.objects.Device) -> None:
    """Another keyword, another class of kernel, too few arguments: the Python method (here a
    recorder) runs; other arguments go to ``Kernel._run``, as the Python method sends them."""
    deferred: list[tuple[Any, ...]] = []
    relauncher = _compiled_memo._launch_memo.Relauncher(lambda *args, **kwargs: deferred.append(args + tuple(kwargs)), False)
    with host.alloc(16) as out:
        echo.launch(1, 1, 1.0, 7, out)
        relauncher(echo, 1, 1, 1.0, 7, out, queue=None)
        relauncher("not a kernel", 1, 1, 1.0, 7, out)
        relauncher(echo, 1)
        assert [args[3:] for args in deferred] == [(1.0, 7, out, "queue"), (1.0, 7, out), ()]
        assert relauncher.counts == {"fast": 0, "packed": 0, "deferred": 3}
        relauncher(echo, 1, 1, 1.0, 7, out, shared_memory=0)  # (the default, given)
        relauncher(echo, 1, 1, 1.0, 7, out, shared_memory=1)  # another shared memory object: packed
        relauncher(echo, 1, 1, 2.0, 7, out)
        assert relauncher.counts == {"fast": 1, "packed": 2, "deferred": 3} and len(deferred) == 3
        assert echoed(out) == (struct.pack("=f", 2.0), 7)
