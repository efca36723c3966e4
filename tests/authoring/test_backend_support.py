"""``offload.backend.support``: the obligations every backend shares, tested without a driver.

``HostFunctions`` is driven by a fake driver whose stream is a thread calling the trampoline's C
address through ctypes, as cuLaunchHostFunc / hipLaunchHostFunc do.
"""

from __future__ import annotations

import ctypes
import queue as queue_module
import threading
from typing import Any

import pytest

import offload
from offload import ErrorCode, KernelParam, OffloadError
from offload.backend.support import (
    DeferredWork,
    HostFunctions,
    KeptErrors,
    ResourcePool,
    launch_extent,
    off_thread,
    raise_kept_errors,
)


def test_raise_kept_errors_is_also_the_packages() -> None:
    assert offload.raise_kept_errors is raise_kept_errors


def test_raise_kept_errors_keeps_every_one_in_order() -> None:
    raise_kept_errors([], "x", "xs")  # nothing kept: nothing raised
    with pytest.raises(OffloadError) as one:
        raise_kept_errors([MemoryError("big")], "a host function on q", "host functions on q")
    assert one.value.code is ErrorCode.OUT_OF_RESOURCES and "a host function on q failed: MemoryError: big" in str(one.value)
    mine = OffloadError(ErrorCode.INVALID_SIZE, "mine")
    with pytest.raises(ExceptionGroup) as group:
        raise_kept_errors([ValueError("first"), mine], "one", "several")
    assert str(group.value).startswith("2 several failed")
    first, second = group.value.exceptions
    assert isinstance(first, OffloadError) and first.code is ErrorCode.UNKNOWN and "first" in first.details
    assert isinstance(first.__cause__, ValueError) and second is mine


class Queue(KeptErrors):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def __repr__(self) -> str:
        return f"<Queue {self.name}>"


def test_kept_errors_are_raised_once_in_order_and_logged_after_the_release(caplog: pytest.LogCaptureFixture) -> None:
    q = Queue("a")
    q.raise_kept()
    q.keep(ValueError("one"))
    q.keep(KeyError("two"))
    with pytest.raises(ExceptionGroup) as group:
        q.raise_kept()
    assert [type(e.__cause__) for e in group.value.exceptions] == [ValueError, KeyError]
    assert "host functions on a" in str(group.value)  # the queue by its name, not its repr
    q.raise_kept()  # forgotten once raised
    q.released = True
    q.keep(RuntimeError("late"))
    q.raise_kept()
    assert "after the final olShutDown, work on <Queue a> failed" in caplog.text


def test_resource_pool_reuses_and_destroys_every_idle_one() -> None:
    made: list[int] = []
    destroyed: list[int] = []

    def create() -> int:
        made.append(len(made))
        return made[-1]

    def destroy(item: int) -> None:
        destroyed.append(item)
        if item % 2 == 0:
            raise OffloadError(ErrorCode.BACKEND_FAILURE, f"cannot destroy {item}")

    pool: ResourcePool[int] = ResourcePool(create, destroy, "streams of device 0")
    a, b = pool.acquire(), pool.acquire()
    pool.release(a)
    assert pool.acquire() == a and made == [0, 1]  # reused, not made again
    c = pool.acquire()
    for item in (a, b, c):
        pool.release(item)
    assert len(pool) == 3 and made == [0, 1, 2]
    with pytest.raises(ExceptionGroup) as group:
        pool.destroy()  # every idle one destroyed though two fail
    assert sorted(destroyed) == [0, 1, 2] and len(pool) == 0
    assert sorted(e.details for e in group.value.exceptions) == ["cannot destroy 0", "cannot destroy 2"]
    pool.destroy()  # nothing idle: nothing raised


def test_launch_extent_is_the_end_of_the_last_parameter() -> None:
    assert launch_extent([]) == 0
    assert launch_extent([KernelParam(0, 4), KernelParam(8, 8), KernelParam(16, 4)]) == 20  # not 24
    assert launch_extent([(8, 8), (0, 4)]) == 16


def test_deferred_work_runs_in_order_counts_per_queue_and_keeps_failures() -> None:
    work = DeferredWork("test-deferred")
    a, b = Queue("a"), Queue("b")
    gate = threading.Event()
    ran: list[str] = []

    def fail() -> None:
        raise ValueError("deferred failure")

    work.submit([(a, lambda: gate.wait(10)), (a, lambda: ran.append("a")), (b, fail), (b, lambda: ran.append("b"))])
    assert work.pending_for(a) and work.pending_for(b)
    gate.set()
    work.wait(b)
    assert ran == ["a", "b"] and not work.pending_for(a) and not work.pending_for(b)
    with pytest.raises(OffloadError, match="deferred failure"):
        b.raise_kept()
    a.raise_kept()


def test_off_thread_returns_or_raises_on_the_callers_thread() -> None:
    me = threading.get_ident()
    assert off_thread(threading.get_ident) != me
    with pytest.raises(KeyError):
        off_thread(lambda: {}["missing"])


class FakeStreams(HostFunctions):
    """A fake driver: each queue is a thread calling the C function it was given, in order."""

    def __init__(self) -> None:
        super().__init__("fake")
        self.streams: dict[Queue, queue_module.Queue[Any]] = {}
        self.launched_on: list[int] = []

    def stream(self, q: Queue) -> None:
        work: queue_module.Queue[Any] = queue_module.Queue()
        self.streams[q] = work

        def run() -> None:
            while (item := work.get()) is not None:
                function, key = item
                function(key)

        threading.Thread(target=run, daemon=True).start()

    def launch_host_function(self, queue: Any, address: int, key: int) -> None:
        if self.running_for() is not None:
            raise AssertionError("a driver call from inside a host function")
        self.launched_on.append(threading.get_ident())
        self.streams[queue].put((ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address), key))

    def wait(self, q: Queue) -> None:
        done = threading.Event()
        self.enqueue(q, done.set)
        assert done.wait(10)
        self.deferred.wait(q)


def test_host_functions_defer_driver_work_and_synchronize_from_inside() -> None:
    fake = FakeStreams()
    own, other = Queue("own"), Queue("other")
    fake.stream(own), fake.stream(other)
    seen: list[Any] = []
    waited: list[str] = []
    recycled: list[str] = []

    def wait(q: Queue) -> None:
        if fake.running_for() is not None:
            raise AssertionError("a driver wait from inside a host function")
        waited.append(q.name)

    def recycle(q: Queue) -> None:
        recycled.append(q.name)

    def query(q: Queue) -> bool:
        if fake.running_for() is not None:
            raise AssertionError("a driver query from inside a host function")
        return False

    def inside() -> None:
        seen.append(fake.running_for() is own)
        seen.append(fake.deferring(None, lambda: seen.append("deferred release")))
        fake.enqueue(own, lambda: seen.append("own, after"))  # runs on the deferred thread
        fake.enqueue(other, lambda: seen.append("other"))  # launched by a short-lived thread
        try:
            fake.synchronize(own, False, wait, recycle)
        except OffloadError as exc:
            seen.append(exc.code.name)
        fake.synchronize(other, False, wait, recycle)  # waited for by a short-lived thread
        seen.append(waited == ["other"])
        seen.append(fake.has_pending_work(own, query))  # its own queue: busy, nothing asked
        seen.append(fake.has_pending_work(other, query))  # asked on a short-lived thread
        seen.append("returning")

    fake.enqueue(own, inside)
    fake.wait(own)
    fake.wait(other)
    # "other" ran on the other stream's thread at any time after its launch; the rest in order
    assert seen.count("other") == 1
    seen.remove("other")
    assert seen == [True, True, "INVALID_QUEUE", True, True, False, "returning", "deferred release", "own, after"]
    assert fake.has_pending_work(own, query) is False and recycled == []

    def release_inside() -> None:
        fake.synchronize(other, True, wait, recycle)  # after this function, on the deferred thread
        fake.synchronize(own, True, wait, recycle)  # dropped the functions behind, recycled after

    dropped: list[str] = []
    gate = threading.Event()
    fake.enqueue(own, lambda: gate.wait(10))
    fake.enqueue(own, release_inside)
    fake.enqueue(own, lambda: dropped.append("ran after the release"))
    gate.set()
    done = threading.Event()
    fake.streams[own].put((lambda _key: done.set(), 0))
    assert done.wait(10)
    fake.deferred.wait(own)
    assert own.released and dropped == [] and sorted(recycled) == ["other", "own"]
    assert waited == ["other", "other"]  # own never waited for: the function held it


def test_synchronize_outside_waits_then_raises_and_recycles_on_failure() -> None:
    fake = FakeStreams()
    q = Queue("q")
    q.keep(ValueError("kept"))
    recycled: list[str] = []

    def failing_wait(_: Queue) -> None:
        raise OffloadError(ErrorCode.BACKEND_FAILURE, "the driver failed")

    with pytest.raises(OffloadError, match="the driver failed"):
        fake.synchronize(q, True, failing_wait, lambda r: recycled.append(r.name))
    assert recycled == ["q"]
    with pytest.raises(OffloadError, match="ValueError: kept"):
        fake.synchronize(q, False, lambda _: None, lambda r: recycled.append(r.name))
    assert recycled == ["q"]


def test_a_host_function_failure_is_kept_on_its_queue() -> None:
    fake = FakeStreams()
    q = Queue("q")
    fake.stream(q)

    def fail() -> None:
        raise RuntimeError("in a host function")

    fake.enqueue(q, fail)
    fake.wait(q)
    with pytest.raises(OffloadError, match="a host function on q failed: RuntimeError: in a host function"):
        q.raise_kept()
    assert fake.pending() == 0
