"""The core's lifetime contracts of issue 5 against the in-process simdev backend (nothing here can
crash the interpreter: simdev records a broken rule instead of making the access): work in flight
waited for before what it uses goes, errors neither lost nor misdirected, and the final olShutDown
raced, interrupted or called from a host function."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

import offload as ol
from offload._core.session import STATE

import simdev
from contract_support import launch_size
from simdev import offload_threads

E = ol.ErrorCode


# --- work in flight ----------------------------------------------------------------------------


def test_destroy_program_waits_for_queued_and_running_launches(sim_session) -> None:
    sim, _ = sim_session
    for _ in range(3):
        program = ol.olCreateProgram(sim, simdev.program({"k": []}, sleep=0.05))
        kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
        queue = ol.olCreateQueue(sim)
        for _ in range(3):
            ol.olLaunchKernel(queue, sim, kernel, None, launch_size())
        outcome: list[object] = []

        def launch() -> None:
            try:
                ol.olLaunchKernel(None, sim, kernel, None, launch_size())
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
                ol.olLaunchKernel(None, sim, kernel, None, launch_size())
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
                        ol.olLaunchKernel(queue, sim, ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL), None, launch_size())
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


def test_mem_free_of_a_pending_copy_destination_waits_on_the_host(host: ol.DeviceHandle) -> None:
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
    ol.olLaunchKernel(queue, sim, kernel, None, launch_size())
    gate.set()
    ol.olSyncQueue(queue)
    assert seen == ["ok"]
    assert not simdev.VIOLATIONS
    ol.olDestroyQueue(queue)
