"""Exit without olShutDown, the final olShutDown from odd places, and the races of issue 5
repeated (OFFLOAD_ROBUSTNESS_BUDGET scales the repeats), each run in a child process where a
failure could crash or hang the interpreter."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

BUDGET = float(os.environ.get("OFFLOAD_ROBUSTNESS_BUDGET", "1"))
HERE = Path(__file__).resolve().parent

PRELUDE = textwrap.dedent(
    """
    import ctypes, sys, threading, time
    sys.path.insert(0, {here!r})
    import offload as ol
    from offload._core.session import STATE
    def host_device():
        found = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        return next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
    def live_threads():
        return [t.name for t in threading.enumerate() if t.name.startswith(("offload", "simdev")) and t.is_alive()]
    """
).format(here=str(HERE))


def _run(run_python, body: str, **kwargs):
    return run_python(PRELUDE + textwrap.dedent(body), **kwargs)


def test_queued_work_is_finished_at_exit_without_shutdown(run_python, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _run(
        run_python,
        f"""
        ol.olInit()
        dev = host_device()
        q = ol.olCreateQueue(dev)
        ol.olLaunchHostFunction(q, lambda _: time.sleep(0.2))
        ol.olLaunchHostFunction(q, lambda _: open({str(marker)!r}, "w").write("yes"))
        parked = ol.olCreateQueue(dev)
        ol.olLaunchHostFunction(parked, lambda _: time.sleep(0.1))
        ol.olDestroyQueue(parked)
        """,
    )
    assert marker.read_text() == "yes"


def test_other_atexit_handlers_can_still_use_the_library(run_python) -> None:
    proc = _run(
        run_python,
        """
        import atexit
        ol.olInit()
        dev = host_device()
        a = ol.olMemAlloc(dev, ol.AllocType.HOST, 64)
        def late():  # registered before offload's own handler ran? it runs first (LIFO); both orders work
            ol.olMemFill(None, a, b"\\1", 64)
            print("late handler ok", ctypes.string_at(a, 2))
        atexit.register(late)
        """,
    )
    assert "late handler ok" in proc.stdout


def test_the_final_shutdown_from_an_iterate_devices_callback(run_python) -> None:
    proc = _run(
        run_python,
        """
        ol.olInit()
        def callback(device, _):
            ol.olShutDown()
            return False
        ol.olIterateDevices(callback, None)
        assert STATE.ctx is None
        print("ok", live_threads())
        """,
    )
    assert "ok []" in proc.stdout


def test_shutdown_from_host_functions_repeated(run_python) -> None:
    """The host backend's own queue is released from inside (hookspecs: the backend drops the
    work behind); whatever it answers, the call returns and the library is shut down."""
    repeats = int(30 * BUDGET)
    proc = _run(
        run_python,
        f"""
        outcomes = set()
        for i in range({repeats}):
            ol.olInit()
            dev = host_device()
            q = ol.olCreateQueue(dev)
            seen, done = [], threading.Event()
            def stop(_):
                try:
                    ol.olShutDown()
                    seen.append("ok")
                except ol.OffloadError as error:
                    seen.append(error.code.name)
                done.set()
            ol.olLaunchHostFunction(q, stop)
            assert done.wait(20), "deadlock"
            assert STATE.ctx is None
            outcomes.update(seen)
        print("done", sorted(outcomes))
        """,
    )
    assert "done" in proc.stdout, proc.stdout


def test_keyboard_interrupt_during_shutdown_leaks_nothing(run_python) -> None:
    proc = _run(
        run_python,
        """
        import _thread
        from offload_host import build_test_kernel
        binary = build_test_kernel("noargs")
        for i in range(5):
            ol.olInit()
            dev = host_device()
            for _ in range(3):
                q = ol.olCreateQueue(dev)
                ol.olLaunchHostFunction(q, lambda _: time.sleep(0.05))
                ol.olCreateProgram(dev, binary)
            threading.Timer(0.01, _thread.interrupt_main).start()
            try:
                ol.olShutDown()
                time.sleep(0.1)  # the interrupt may land after a quick shutdown
            except KeyboardInterrupt:
                pass
            assert STATE.ctx is None
            time.sleep(0.02)
            assert not live_threads(), live_threads()
        print("done")
        """,
    )
    assert "done" in proc.stdout


def test_parked_queue_errors_never_reach_new_queues_repeated(run_python) -> None:
    repeats = int(200 * BUDGET)
    proc = _run(
        run_python,
        f"""
        ol.olInit()
        dev = host_device()
        def fail(_):
            raise ValueError("old failure")
        for i in range({repeats}):
            q = ol.olCreateQueue(dev)
            ol.olLaunchHostFunction(q, lambda _: time.sleep(0.0005))
            ol.olLaunchHostFunction(q, fail)
            ol.olDestroyQueue(q)
            fresh = ol.olCreateQueue(dev)  # must never raise the old failure
            ol.olDestroyQueue(fresh)
        try:
            ol.olShutDown()
            raise SystemExit("the failures were lost")
        except ol.OffloadError as error:
            print("kept", len(error.errors))
        """,
    )
    kept = int(proc.stdout.split("kept")[1])
    assert kept == int(200 * BUDGET)


def test_calls_racing_the_final_shutdown_repeated(run_python) -> None:
    repeats = int(20 * BUDGET)
    proc = _run(
        run_python,
        f"""
        from offload_host import build_test_kernel
        binary = build_test_kernel("noargs")
        import offload_host._image as image_module
        for i in range({repeats}):
            ol.olInit()
            dev = host_device()
            go = threading.Event()
            def churn():
                go.wait()
                try:
                    while True:
                        p = ol.olCreateProgram(dev, binary)
                        k = ol.olGetSymbol(p, "noargs", ol.SymbolKind.KERNEL)
                        ol.olLaunchKernel(None, dev, k, None, ol.KernelLaunchSizeArgs(1, (4, 1, 1), (1, 1, 1)))
                        a = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
                        ol.olMemFill(None, a, b"\\0", 64)
                except ol.OffloadError as error:
                    assert error.code is ol.ErrorCode.UNINITIALIZED or "destroyed" in error.details, error
            workers = [threading.Thread(target=churn) for _ in range(3)]
            for w in workers:
                w.start()
            go.set()
            time.sleep(0.01)
            ol.olShutDown()
            for w in workers:
                w.join()
            assert not live_threads(), live_threads()
            loaded = [l for l in open("/proc/self/maps") if "offload-host-" in l]
            assert not loaded, loaded  # no program left mapped
        print("done")
        """,
    )
    assert "done" in proc.stdout


def test_shutdown_and_destroy_wait_for_a_long_synchronous_host_launch(run_python) -> None:
    proc = _run(
        run_python,
        """
        import struct
        from offload_host import build_test_kernel
        binary = build_test_kernel("single_counter")
        for what in ("olDestroyProgram", "olShutDown", "queued"):
            ol.olInit()
            dev = host_device()
            program = ol.olCreateProgram(dev, binary)
            kernel = ol.olGetSymbol(program, "single_counter", ol.SymbolKind.KERNEL)
            init = ol.olMemAlloc(dev, ol.AllocType.HOST, 4)
            out = ol.olMemAlloc(dev, ol.AllocType.HOST, 4)
            ol.olMemFill(None, init, b"\\0\\0\\0\\0", 4)
            args = struct.pack("iiPP", 200_000_000, 1, init, out)
            one = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
            started = time.perf_counter()
            queue = ol.olCreateQueue(dev) if what == "queued" else None
            outcome = []
            def launch():
                try:
                    ol.olLaunchKernel(queue, dev, kernel, args, one)
                    outcome.append("ok")
                except BaseException as error:
                    outcome.append(repr(error))
            runner = threading.Thread(target=launch)
            runner.start()
            time.sleep(0.05)
            if what == "queued":
                ol.olLaunchKernel(queue, dev, kernel, args, one)
                ol.olDestroyProgram(program)  # waits for both queued launches
                ol.olMemFree(out)  # the launches wrote it: freed only after them
                ol.olShutDown()
            elif what == "olDestroyProgram":
                ol.olDestroyProgram(program)  # waits for the running launch
                ol.olShutDown()
            else:
                ol.olShutDown()  # waits for the call inside the other thread
            runner.join()
            assert outcome == ["ok"], (what, outcome)
            print(what, "waited", round(time.perf_counter() - started, 2))
        print("done")
        """,
    )
    assert "done" in proc.stdout, proc.stdout
