"""The core's contracts of issue 5 against the in-process simdev backend (nothing here can crash
the interpreter: simdev records a broken rule instead of making the access)."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

import offload as ol
from offload._core.session import STATE

import simdev
from simdev import offload_threads

E = ol.ErrorCode
PARAMS = {"two": [[0, 8], [8, 4]], "none": [], "unknown": None}


def _error(call, *args) -> ol.OffloadError:
    with pytest.raises(ol.OffloadError) as info:
        call(*args)
    return info.value


def _launch(groups=(1, 1, 1), items=(1, 1, 1)) -> ol.KernelLaunchSizeArgs:
    return ol.KernelLaunchSizeArgs(3, groups, items)


@pytest.fixture
def kernels(sim_session):
    sim, _ = sim_session
    program = ol.olCreateProgram(sim, simdev.program(PARAMS))
    return {name: ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL) for name in PARAMS}


# --- kernel argument sizes ---------------------------------------------------------------------


@pytest.mark.parametrize("queued", [False, True])
def test_short_argument_buffers_are_refused_naming_both_sizes(sim_session, kernels, queued: bool) -> None:
    sim, _ = sim_session
    queue = ol.olCreateQueue(sim) if queued else None
    two = kernels["two"]
    for args in (b"", b"\0" * 11, bytearray(4), memoryview(b"\0" * 12)[:11]):
        error = _error(ol.olLaunchKernel, queue, sim, two, args, _launch())
        assert error.code is E.INVALID_ARGUMENT
        assert str(len(bytes(args))) in error.details and "12" in error.details
    error = _error(ol.olLaunchKernel, queue, sim, two, None, _launch())
    assert error.code is E.INVALID_ARGUMENT and "NULL" in error.details
    for args in (b"\0" * 12, b"\0" * 16, bytearray(64)):  # longer is fine (tail padding)
        ol.olLaunchKernel(queue, sim, two, args, _launch())
    ol.olLaunchKernel(queue, sim, kernels["none"], None, _launch())
    ol.olLaunchKernel(queue, sim, kernels["none"], b"", _launch())
    ol.olLaunchKernel(queue, sim, kernels["unknown"], None, _launch())  # unknown: not checked
    ol.olLaunchKernel(queue, sim, kernels["unknown"], b"x", _launch())
    noncontiguous = memoryview(bytearray(32))[::2]
    assert _error(ol.olLaunchKernel, queue, sim, two, noncontiguous, _launch()).code is E.INVALID_ARGUMENT
    if queue is not None:
        ol.olSyncQueue(queue)


class NoParamsBackend(simdev.SimBackend):
    kernel_params = None  # a backend without the hook: every kernel is "unknown"


@pytest.mark.parametrize("sim_backend", [NoParamsBackend])
def test_a_backend_without_kernel_params_is_not_checked(sim_session) -> None:
    sim, _ = sim_session
    program = ol.olCreateProgram(sim, simdev.program(PARAMS))
    kernel = ol.olGetSymbol(program, "two", ol.SymbolKind.KERNEL)
    ol.olLaunchKernel(None, sim, kernel, b"", _launch())
    ol.olLaunchKernel(None, sim, kernel, None, _launch())


def test_launch_limits_are_invalid_size(sim_session, kernels) -> None:
    sim, _ = sim_session
    kernel = kernels["none"]
    for groups, items in [
        ((1, 1, 1), (257, 1, 1)),  # MAX_WORK_GROUP_SIZE 256
        ((1, 1, 1), (16, 16, 2)),  # 512 items in a group
        ((1, 1, 1), (1, 129, 1)),  # per dimension y 128
        ((4097, 1, 1), (256, 1, 1)),  # MAX_WORK_SIZE_PER_DIMENSION.x 2**20
        ((1024, 65, 1), (16, 1, 1)),  # 16 * 1024 * 65 > MAX_WORK_SIZE 2**20
        ((2**32 - 1, 2**32 - 1, 2**32 - 1), (1, 1, 1)),  # more than 2**64 groups
    ]:
        error = _error(ol.olLaunchKernel, None, sim, kernel, None, _launch(groups, items))
        assert error.code is E.INVALID_SIZE, (groups, items, error)
    ol.olLaunchKernel(None, sim, kernel, None, _launch((4096, 1, 1), (256, 1, 1)))


def test_grids_of_2_64_groups_are_invalid_size_on_the_host(host: ol.Device) -> None:
    from offload_host import build_test_kernel

    program = ol.olCreateProgram(host, build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    huge = ol.KernelLaunchSizeArgs(3, (2**32 - 1,) * 3, (1, 1, 1))
    assert _error(ol.olLaunchKernel, None, host, kernel, None, huge).code is E.INVALID_SIZE


# --- device memory ranges ----------------------------------------------------------------------


@pytest.mark.parametrize("queued", [False, True])
def test_device_ranges_are_checked(sim_session, queued: bool) -> None:
    sim, host = sim_session
    queue = ol.olCreateQueue(sim) if queued else None
    a = ol.olMemAlloc(sim, ol.AllocType.DEVICE, 64)
    buf = (ctypes.c_char * 128)()
    h = ctypes.addressof(buf)
    ol.olMemcpy(queue, a, sim, h, host, 64)
    ol.olMemcpy(queue, h, host, a, sim, 64)
    cases = [
        ((a, sim, h, host, 65), E.INVALID_SIZE),
        ((a + 8, sim, h, host, 57), E.INVALID_SIZE),
        ((h, host, a - 8, sim, 16), E.INVALID_SIZE),  # starts before, ends inside
        ((a - 4096, sim, h, host, 8), E.INVALID_ARGUMENT),  # never allocated
        ((h, host, a, host, 8), E.INVALID_ARGUMENT),  # device memory claimed as host memory
        ((a, sim, 0xDEAD0000, host, 8), E.INVALID_ARGUMENT),  # unmapped host source
        ((0xDEAD0000, host, a, sim, 8), E.INVALID_ARGUMENT),  # unmapped host destination
        ((a, sim, h, host, 2**64 - 1), E.INVALID_SIZE),
        ((a, sim, h, host, 2**64 + 8), E.INVALID_SIZE),
        ((a + 2**64, sim, h, host, 8), E.INVALID_ARGUMENT),
    ]
    for args, code in cases:
        error = _error(ol.olMemcpy, queue, *args)
        assert error.code is code, (args, error)
        assert error.details
    assert _error(ol.olMemFill, queue, a, b"\1", 72).code is E.INVALID_SIZE
    ol.olMemFill(queue, a, b"\1", 64)
    ol.olMemFree(a)
    assert _error(ol.olMemcpy, queue, a, sim, h, host, 8).code is E.INVALID_ARGUMENT  # freed
    assert _error(ol.olMemcpy, queue, h, host, a, sim, 8).code is E.INVALID_ARGUMENT
    if queue is not None:
        assert _error(ol.olMemFill, queue, a, b"\1", 8).code is E.INVALID_ARGUMENT
        ol.olSyncQueue(queue)


def test_global_variables_are_known_device_ranges(sim_session) -> None:
    sim, host = sim_session
    program = ol.olCreateProgram(sim, simdev.program({}, {"table": 32}))
    symbol = ol.olGetSymbol(program, "table", ol.SymbolKind.GLOBAL_VARIABLE)
    address = ol.olGetSymbolInfo(symbol, ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
    buf = (ctypes.c_char * 64)(*b"g" * 64)
    ol.olMemcpy(None, address, sim, ctypes.addressof(buf), host, 32)
    assert _error(ol.olMemcpy, None, address, sim, ctypes.addressof(buf), host, 33).code is E.INVALID_SIZE
    ol.olDestroyProgram(program)
    assert _error(ol.olMemcpy, None, address, sim, ctypes.addressof(buf), host, 8).code is E.INVALID_ARGUMENT


def test_memory_safety_does_not_depend_on_the_validation_switch(monkeypatch, sim_backend) -> None:
    monkeypatch.setenv("OFFLOAD_DISABLE_VALIDATION", "1")
    ol.register_backend("simdev", sim_backend)
    ol.olInit()
    try:
        host = next(d for d in __import__("helpers").devices() if d.platform.kind is ol.PlatformBackend.HOST)
        buf = (ctypes.c_char * 8)()
        for args in [(0, host, ctypes.addressof(buf), host, 8), (ctypes.addressof(buf), host, 0, host, 8)]:
            assert _error(ol.olMemcpy, None, *args).code is E.INVALID_ARGUMENT
        assert _error(ol.olMemFree, 0).code is E.INVALID_ARGUMENT
    finally:
        ol.olShutDown()
        ol.unregister_backend("simdev")


# --- work in flight ----------------------------------------------------------------------------


def test_destroy_program_waits_for_queued_and_running_launches(sim_session) -> None:
    sim, _ = sim_session
    for _ in range(3):
        program = ol.olCreateProgram(sim, simdev.program({"k": []}, sleep=0.05))
        kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
        queue = ol.olCreateQueue(sim)
        for _ in range(3):
            ol.olLaunchKernel(queue, sim, kernel, None, _launch())
        outcome: list[object] = []

        def launch() -> None:
            try:
                ol.olLaunchKernel(None, sim, kernel, None, _launch())
                outcome.append("ok")
            except BaseException as error:  # noqa: BLE001 - checked below
                outcome.append(error)

        runner = threading.Thread(target=launch)
        runner.start()
        time.sleep(0.01)  # not a synchronisation: the destroy must wait whether or not the launch began
        ol.olDestroyProgram(program)  # waits: simdev records an unload under a run
        runner.join()
        assert outcome == ["ok"], outcome
        ol.olDestroyQueue(queue)
    assert not simdev.VIOLATIONS


def test_mem_free_waits_for_queued_work_using_it(sim_session) -> None:
    sim, host = sim_session
    queue = ol.olCreateQueue(sim)
    a = ol.olMemAlloc(sim, ol.AllocType.DEVICE, 64)
    src = (ctypes.c_char * 64)(*b"s" * 64)
    ol.olLaunchHostFunction(queue, lambda _: time.sleep(0.05))
    ol.olMemcpy(queue, a, sim, ctypes.addressof(src), host, 64)
    ol.olMemFree(a)  # the queued copy runs first
    assert not simdev.VIOLATIONS
    ol.olDestroyQueue(queue)


def test_shutdown_waits_for_a_long_synchronous_launch(sim_backend) -> None:
    simdev.VIOLATIONS.clear()
    ol.register_backend("simdev", sim_backend)
    try:
        ol.olInit()
        sim = next(d for d in __import__("helpers").devices() if d.platform.name == "simdev")
        program = ol.olCreateProgram(sim, simdev.program({"k": []}, sleep=0.2))
        kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
        outcome: list[object] = []

        def launch() -> None:
            try:
                ol.olLaunchKernel(None, sim, kernel, None, _launch())
                outcome.append("ok")
            except ol.OffloadError as error:
                outcome.append(error.code)

        runner = threading.Thread(target=launch)
        runner.start()
        time.sleep(0.05)
        ol.olShutDown()
        runner.join()
        assert outcome == ["ok"]
        assert not simdev.VIOLATIONS
    finally:
        ol.unregister_backend("simdev")


# --- races and lost errors ---------------------------------------------------------------------


def _fail(message: str):
    def host_function(_: object) -> None:
        raise ValueError(message)

    return host_function


def test_a_parked_queue_error_goes_to_shutdown_not_to_the_next_creator(sim_session) -> None:
    sim, _ = sim_session
    queue = ol.olCreateQueue(sim)
    ol.olLaunchHostFunction(queue, lambda _: time.sleep(0.05))
    ol.olLaunchHostFunction(queue, _fail("orphaned failure"))
    ol.olDestroyQueue(queue)  # parked: still busy
    time.sleep(0.15)
    for _ in range(3):
        fresh = ol.olCreateQueue(sim)  # may reuse the parked queue: never raises its error
        ol.olSyncQueue(fresh)
        ol.olDestroyQueue(fresh)
    with pytest.raises(ol.OffloadError) as info:
        ol.olShutDown()
    assert any("orphaned failure" in e.details for e in info.value.errors)


def test_every_failure_of_a_group_is_kept(sim_session) -> None:
    sim, _ = sim_session
    queue = ol.olCreateQueue(sim)
    for i in range(3):
        ol.olLaunchHostFunction(queue, _fail(f"failure {i}"))
    with pytest.raises(ol.OffloadError) as info:
        ol.olSyncQueue(queue)
    assert [e.details.split(": ")[-1] for e in info.value.errors] == ["failure 0", "failure 1", "failure 2"]
    ol.olDestroyQueue(queue)


class FailingReleaseBackend(simdev.SimBackend):
    releases = 0  # every failed release, counted so that the test can demand each one back

    @ol.hookimpl
    def synchronize(self, device, queue, release):
        super().synchronize(device, queue, release)
        if release:
            type(self).releases += 1
            raise RuntimeError("release failed")


@pytest.mark.parametrize("sim_backend", [FailingReleaseBackend])
def test_failures_releasing_parked_queues_drop_nothing(sim_session) -> None:
    sim, _ = sim_session
    FailingReleaseBackend.releases = 0
    for _ in range(20):
        queue = ol.olCreateQueue(sim)
        ol.olLaunchHostFunction(queue, lambda _: time.sleep(0.002))
        ol.olDestroyQueue(queue)
    time.sleep(0.1)
    busy = ol.olCreateQueue(sim)
    ol.olLaunchHostFunction(busy, lambda _: time.sleep(0.01))
    ol.olDestroyQueue(busy)  # parks it and releases the surplus, whose failures are kept
    with pytest.raises(ol.OffloadError) as info:
        ol.olShutDown()
    released_early = len(info.value.errors)
    assert FailingReleaseBackend.releases >= 1  # how many were surplus before the final release depends on timing
    assert released_early == FailingReleaseBackend.releases  # every release failure kept, none dropped
    assert all("release failed" in e.details for e in info.value.errors)


def test_a_host_function_may_call_the_final_shutdown(sim_session) -> None:
    sim, _ = sim_session
    queue = ol.olCreateQueue(sim)
    gate, done = threading.Event(), threading.Event()
    seen: list[object] = []

    def shut_down(_: object) -> None:
        gate.wait(10)
        try:
            ol.olShutDown()
            seen.append("ok")
        except ol.OffloadError as error:
            seen.append(error)
        done.set()

    ol.olLaunchHostFunction(queue, shut_down)
    ol.olLaunchHostFunction(queue, seen.append)  # queued behind it: dropped by the release
    gate.set()
    assert done.wait(10), "the final olShutDown from a host function deadlocked"
    assert seen == ["ok"]
    assert STATE.ctx is None
    for thread in offload_threads():
        thread.join(5)
    assert not [t for t in offload_threads() if t.is_alive()]


class InterruptingBackend(simdev.SimBackend):
    @ol.hookimpl
    def unload_binary(self, device, image):
        super().unload_binary(device, image)
        raise KeyboardInterrupt


@pytest.mark.parametrize("sim_backend", [InterruptingBackend])
def test_a_base_exception_during_teardown_finishes_it_then_is_raised(sim_session) -> None:
    sim, host = sim_session
    for _ in range(3):
        ol.olCreateProgram(sim, simdev.program({"k": []}))
    queue = ol.olCreateQueue(host)
    ol.olLaunchHostFunction(queue, lambda _: None)
    with pytest.raises(KeyboardInterrupt):
        ol.olShutDown()
    assert STATE.ctx is None
    assert not [i for i in simdev.IMAGES if i.loaded]


def test_threads_racing_the_final_shutdown_leave_nothing_loaded(sim_backend) -> None:
    ol.register_backend("simdev", sim_backend)
    try:
        for _ in range(10):
            ol.olInit()
            sim = next(d for d in __import__("helpers").devices() if d.platform.name == "simdev")
            stop = threading.Event()

            def churn() -> None:
                while not stop.is_set():
                    try:
                        program = ol.olCreateProgram(sim, simdev.program({"k": []}))
                        queue = ol.olCreateQueue(sim)
                        ol.olLaunchKernel(queue, sim, ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL), None, _launch())
                    except ol.OffloadError:
                        return

            workers = [threading.Thread(target=churn) for _ in range(4)]
            for w in workers:
                w.start()
            time.sleep(0.02)
            ol.olShutDown()
            stop.set()
            for w in workers:
                w.join()
            assert not [i for i in simdev.IMAGES if i.loaded]
            assert not [t for t in offload_threads() if t.is_alive()]
    finally:
        ol.unregister_backend("simdev")


def test_mem_free_of_a_pending_copy_destination_waits_on_the_host(host: ol.Device) -> None:
    queue = ol.olCreateQueue(host)
    a = ol.olMemAlloc(host, ol.AllocType.DEVICE, 64)
    src = (ctypes.c_char * 64)(*b"c" * 64)
    ol.olLaunchHostFunction(queue, lambda _: time.sleep(0.1))
    ol.olMemcpy(queue, a, host, ctypes.addressof(src), host, 64)
    ol.olMemFree(a)  # waits for the copy into it
    assert ol.olQueryQueue(queue)
    ol.olDestroyQueue(queue)


def test_releases_from_a_host_function_are_queued_behind_it(sim_session) -> None:
    sim, host = sim_session
    queue = ol.olCreateQueue(sim)
    a = ol.olMemAlloc(sim, ol.AllocType.DEVICE, 64)
    program = ol.olCreateProgram(sim, simdev.program({"k": []}, sleep=0.01))
    kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
    src = (ctypes.c_char * 64)()
    seen: list[object] = []
    gate = threading.Event()

    def release(_: object) -> None:
        gate.wait(10)  # the copy and the launch below are queued behind this function first
        try:
            ol.olMemFree(a)
            ol.olDestroyProgram(program)
            seen.append("ok")
        except ol.OffloadError as error:
            seen.append(error)

    ol.olLaunchHostFunction(queue, release)
    ol.olMemcpy(queue, a, sim, ctypes.addressof(src), host, 64)  # enqueued before the release ran
    ol.olLaunchKernel(queue, sim, kernel, None, _launch())
    gate.set()
    ol.olSyncQueue(queue)
    assert seen == ["ok"]
    assert not simdev.VIOLATIONS
    ol.olDestroyQueue(queue)
