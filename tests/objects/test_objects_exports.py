"""Exports and stale memory: a numpy view or DLPack export never outlives the memory it reads.

The rule (README, "The object layer"): ``Buffer.close()`` and ``Program.close()`` raise while an
export of their memory lives (as ``mmap.close()`` does); exports hold the session, so an
``olShutDown`` only drops a reference until the last export goes; a Buffer, Array or global
variable of an ended session (or a closed program) is an OffloadError wherever its address is
needed. Every case that could crash runs in a child process, so a segfault fails one test.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import offload
from offload import ErrorCode, OffloadError

from objects_support import SAXPY_SIGNATURE

PRELUDE = textwrap.dedent(
    """
    import gc
    import numpy as np
    import offload, offload_host
    from offload import OffloadError
    host = offload.devices("host")[0]
    """
)


def _child(body: str) -> str:
    """Run ``body`` in a fresh interpreter; its stdout, failing the test on a crash or an error."""
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True, timeout=120
    )
    if proc.returncode < 0:
        pytest.fail(f"the child died of {signal.Signals(-proc.returncode).name}: {proc.stdout}{proc.stderr}")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("export", ["np.from_dlpack(a)", "np.asarray(a)", "np.asarray(a.buffer.view(np.uint8))"])
def test_close_refuses_while_a_numpy_view_lives(export: str) -> None:
    out = _child(
        f"""
        a = offload.to_device(np.arange(64, dtype=np.float64), host)
        v = {export}
        try:
            a.buffer.close()
        except OffloadError as error:
            print("refused", error.code.name, "alive" in error.details)
        print(float(v.astype(np.float64).sum()))
        del v
        gc.collect()
        a.buffer.close()
        print("closed", a.buffer.closed)
        """
    )
    assert out.split("\n")[0] == "refused INVALID_ARGUMENT True"
    assert "closed True" in out


@pytest.mark.parametrize("export", ["np.from_dlpack(a)", "np.asarray(a)"])
def test_olshutdown_keeps_exported_memory_until_the_last_export_goes(export: str) -> None:
    out = _child(
        f"""
        a = offload.to_device(np.arange(64, dtype=np.float64), host)
        v = {export}
        offload.olShutDown()  # the layer's reference: the view still reads live memory
        print(v.sum(), v[63])
        v[0] = 5.0
        print(v.sum())
        del v
        gc.collect()
        print(a.buffer.exports)  # counting settles: the session kept only by the view ends
        try:
            a.address
        except OffloadError as error:
            print("stale", error.code.name, "ended" in error.details)
        """
    )
    assert out.split("\n")[:4] == ["2016.0 63.0", "2021.0", "0", "stale INVALID_ARGUMENT True"]


def test_a_capsule_also_holds_the_memory() -> None:
    out = _child(
        """
        a = offload.to_device(np.arange(16, dtype=np.int32), host)
        capsule = a.__dlpack__(max_version=(1, 0))
        try:
            a.buffer.close()
        except OffloadError:
            print("refused")
        del capsule  # never consumed
        gc.collect()
        a.buffer.close()
        print("closed")
        """
    )
    assert out.split() == ["refused", "closed"]


def test_a_buffer_of_an_ended_session_is_an_error_at_launch() -> None:
    out = _child(
        f"""
        x = offload.to_device(np.ones(64, np.float32), host)
        offload.objects._session.release()  # the final olShutDown: x's memory is released
        y = offload.to_device(np.zeros(64, np.float32), "host")  # a new session
        kernel = offload.devices("host")[0].load_program(offload_host.build_test_kernel("saxpy")).kernel(
            "saxpy", {SAXPY_SIGNATURE!r})
        for args in ((2.0, x, y, 64), (2.0, x.buffer, y, 64)):
            try:
                kernel.launch(1, 64, *args)
            except OffloadError as error:
                print(error.code.name, "'saxpy'" in error.details, "'x'" in error.details, "ended" in error.details)
        try:
            x.to_numpy()
        except OffloadError as error:
            print("copy", error.code.name)
        print(y.to_numpy().sum())
        """
    )
    assert out.split("\n")[:4] == ["INVALID_ARGUMENT True True True"] * 2 + ["copy INVALID_ARGUMENT", "0.0"]


def test_a_global_variable_after_its_program_closed() -> None:
    out = _child(
        """
        program = host.load_program(offload_host.build_test_kernel("global"))
        program.kernel("write").launch(1, 64)
        g = program.global_variable("global")
        view = np.asarray(g.view(np.uint32))
        try:
            program.close()
        except OffloadError as error:
            print("refused", error.code.name)
        print(int(view.sum()))
        del view
        gc.collect()
        program.close()
        for use in (lambda: g.to_bytes(), lambda: g.view(np.uint32).to_numpy(), lambda: np.asarray(g.view())):
            try:
                use()
            except OffloadError as error:
                print("closed", error.code.name)
        try:
            program.global_variable("global")
        except OffloadError as error:
            print("program closed", error.code.name)
        """
    )
    assert out.split("\n")[:6] == [
        "refused INVALID_ARGUMENT",
        str(sum(range(64)) * 2),
        "closed INVALID_ARGUMENT",
        "closed INVALID_ARGUMENT",
        "closed INVALID_ARGUMENT",
        "program closed INVALID_ARGUMENT",
    ]


def test_exports_counts_every_kind(host: offload.objects.Device) -> None:
    a = offload.to_device(np.arange(8, dtype=np.float32), host, "host")
    assert a.buffer.exports == 0
    views = [np.from_dlpack(a), np.asarray(a), np.asarray(a.buffer.view(">u4"))]
    assert a.buffer.exports == 3
    with pytest.raises(OffloadError) as info:
        a.buffer.close()
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "3 DLPack" in info.value.details
    del views
    assert a.buffer.exports == 0
    a.buffer.close()
