"""The replayed launch (``offload.objects._compiled._replay``, objects/_records.py): Python decides whether a
launch may reuse the kernel's remembered one (``same_call``) and remembers launches as
``LaunchVerdict``s; ``Queue.launch`` and ``Kernel.launch`` replay a verdict in C where the
compiled path runs, for the very argument objects it was made with (its scalars by class and
value), hand other arguments to ``Kernel._run`` as the Python method does, and run the Python
method for every other call (the same bytes reach the kernel, the same errors). ``counts`` of the
C methods ({'fast', 'packed', 'deferred'}) tell which ran; under ``OFFLOAD_COMPILED=0`` the
methods are the Python functions and only the results are checked."""

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
from offload.objects import Kernel, Queue, _records
from offload.objects._program import NO_MEMO

from objects_support import SAXPY_SIGNATURE, echoed, relaunched

needs_memo = pytest.mark.skipif(
    not _records.ACTIVE, reason="the replayed launches are off here (OFFLOAD_COMPILED=0, or not built)"
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
        assert (type(method).__name__ == "Relauncher") is _records.ACTIVE
        assert method.__name__ == "launch" and "packed" in (Kernel.launch.__doc__ or "") + (Queue.launch.__doc__ or "")
    probe = "from offload.objects import Queue, Kernel; print(type(Queue.launch).__name__, type(Kernel.launch).__name__)"
    unbuilt = "import sys; sys.modules['offload.objects._compiled._replay'] = None; "  # as if built without a compiler
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
        assert relaunched() == before + _records.ACTIVE
        launch(1, 7, out)  # 1 == 1.0: another class, packed again (as the float 1.0)
        assert echoed(out) == (struct.pack("=f", 1.0), 7)
        for value in (0.0, 0.0, -0.0, -0.0):  # 0.0 == -0.0, but they pack apart: never remembered
            launch(value, 7, out)
            assert echoed(out)[0] == struct.pack("=f", value)
        assert relaunched() == before + _records.ACTIVE
        doomed = host.alloc(16)
        launch(3.0, 9, doomed)
        launch(3.0, 9, doomed)
        assert relaunched() == before + 2 * _records.ACTIVE
        doomed.close()
        with pytest.raises(OffloadError, match=r"parameter 'out' .*closed"):
            launch(3.0, 9, doomed)
        assert relaunched() == before + 2 * _records.ACTIVE


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
        assert relaunched() == before + _records.ACTIVE
        np.testing.assert_array_equal(y.to_numpy(), [4, 4, 4, 4])


def test_a_zero_is_never_remembered(echo: offload.Kernel, host: offload.objects.Device) -> None:
    """0.0 == -0.0, but they pack apart: Python never remembers a launch with a float 0.0, so no
    verdict holds one (C compares a remembered float by value) and each zero reaches the kernel."""
    with host.alloc(16) as out:
        for value in (0.0, -0.0, float("0"), -0.0):
            echo.launch(1, 1, value, 7, out)
            assert all(not (a.__class__ is float and a == 0.0) for memo in (echo._memo, echo._memo_previous) for a in memo.args)
            assert echoed(out) == (struct.pack("=f", value), 7)


def test_a_remembered_launch_is_a_launch_verdict(echo: offload.Kernel, host: offload.objects.Device) -> None:
    with host.alloc(16) as out:
        echo.launch(1, 1, 1.0, 7, out)
        m = echo._memo
        assert type(m) is _records.LaunchVerdict and m.args == (1.0, 7, out) and m.owner is echo
        assert (m.first, m.first_class, m.second, m.second_class) == (0, float, 1, int)
        assert m.closes == _records.STAMPS.closes and m.launch is offload.olLaunchKernel
        assert NO_MEMO.args != (1.0, 7, out)


@needs_memo
def test_the_c_methods_hand_other_calls_on(echo: offload.Kernel, host: offload.objects.Device) -> None:
    """Another keyword, another class of kernel, too few arguments: the Python method (here a
    recorder) runs; arguments no verdict was made for go where the Python method sends them,
    ``miss`` (here another recorder standing for ``Kernel._run``)."""
    deferred: list[tuple[Any, ...]] = []
    missed: list[tuple[Any, ...]] = []
    relauncher = _records._replay.Relauncher(
        lambda *args, **kwargs: deferred.append(args + tuple(kwargs)), False, ("shared_memory", "queue"), (0, None), 0,
        lambda kernel, queue, grid, block, shared, args: missed.append((kernel, queue, grid, block, shared, args)),
    )
    with host.alloc(16) as out, host.queue() as queue:
        echo.launch(1, 1, 1.0, 7, out)
        relauncher(echo, 1, 1, 1.0, 7, out, queue=queue)  # (not the default)
        relauncher(echo, 1, 1, 1.0, 7, out, other=None)
        relauncher("not a kernel", 1, 1, 1.0, 7, out)
        relauncher(echo, 1)
        assert [args[3:] for args in deferred] == [(1.0, 7, out, "queue"), (1.0, 7, out, "other"), (1.0, 7, out), ()]
        assert relauncher.counts == {"fast": 0, "packed": 0, "deferred": 4}
        relauncher(echo, 1, 1, 2.0, 7, out)  # another value
        relauncher(echo, 1, 1, 1.0, 7, out, shared_memory=1)  # another shared memory object
        relauncher(echo, 1, 1, 1, 7, out)  # 1 == 1.0, another class
        assert missed == [(echo, None, 1, 1, 0, (2.0, 7, out)), (echo, None, 1, 1, 1, (1.0, 7, out)), (echo, None, 1, 1, 0, (1, 7, out))]
        assert relauncher.counts == {"fast": 0, "packed": 3, "deferred": 4}
        relauncher(echo, 1, 1, 1.0, 7, out, shared_memory=0, queue=None)  # (the defaults, given)
        relauncher(echo, 1, 1, float("1"), int("7"), out)  # equal scalars of the remembered classes
        assert relauncher.counts == {"fast": 2, "packed": 3, "deferred": 4} and len(deferred) == 4
        assert echoed(out) == (struct.pack("=f", 1.0), 7)
    with pytest.raises(TypeError):
        _records._replay.Relauncher(print, False, ("shared_memory",), (0,), 0, "not callable")
