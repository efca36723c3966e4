"""6.6 queue (olCreateQueue, olDestroyQueue, olSyncQueue, olGetQueueInfo(Size), olWaitEvents,
olLaunchHostFunction, olQueryQueue)."""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._child import run_script
from ._helpers import FORCE_UINT32, NULL_HANDLE, NULL_POINTER, Base, BlockedQueue, InfoQueryRefusals, SequenceArgs
from ._helpers import DeviceMemory, destroyed_twice, fibonacci, kernel, launch, ptr_arg, raises, require, u32s

Q = ol.QueueInfo

#: The child of ``test_final_shutdown_inside_drops_what_is_behind``: prints one JSON line.
_SHUTDOWN_INSIDE = r"""
import json, os, threading, time
import offload as ol
before = {t.ident for t in threading.enumerate()}
ol.olInit()
devices = []
ol.olIterateDevices(lambda d, _: devices.append(d) or True, None)
name = os.environ["OFFLOAD_KIT_PLATFORM"]
mine = [d for d in devices if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME) == name]
queue = ol.olCreateQueue(mine[int(os.environ["OFFLOAD_KIT_INDEX"])])
ran, gate, done = [], threading.Event(), threading.Event()
def shut(_):
    gate.wait(30)  # until the function behind is queued
    ol.olShutDown()
    ran.append("shut down")
    done.set()
ol.olLaunchHostFunction(queue, shut, None)
ol.olLaunchHostFunction(queue, ran.append, "behind: must be dropped")
gate.set()
returned = done.wait(30)
time.sleep(0.3)  # what was queued behind would have run by now
deadline = time.monotonic() + 30  # the deferred teardown ends once shut() has returned
left = lambda: [t.name for t in threading.enumerate()  # a driver's own threads (dummies) are not offload's
                if t.ident not in before and t.is_alive() and not isinstance(t, threading._DummyThread)]
while left() and time.monotonic() < deadline:
    time.sleep(0.01)
threads = left()
ol.olInit()
ol.olShutDown()
print(json.dumps({"returned": returned, "ran": ran, "threads": threads, "again": True}))
"""


class TestQueue(Base):
    def test_create_success(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "queues")
        queue = ol.olCreateQueue(device)
        assert isinstance(queue, ol.Queue)
        assert ol.olGetQueueInfo(queue, ol.QueueInfo.DEVICE) is device, "the queue does not name its device"
        assert ol.olGetQueueInfo(queue, ol.QueueInfo.EMPTY) is True  # nothing was enqueued
        ol.olDestroyQueue(queue)

    def test_create_many(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "queues")
        queues = [ol.olCreateQueue(device) for _ in range(16)]
        assert len(set(map(id, queues))) == 16
        for queue in queues:
            ol.olDestroyQueue(queue)

    def test_create_invalid_null_handle_device(self) -> None:
        with raises(NULL_HANDLE):
            ol.olCreateQueue(None)

    def test_destroy_success(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "queues")
        queue = ol.olCreateQueue(device)
        ol.olDestroyQueue(queue)

    def test_destroy_twice(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "queues")
        destroyed_twice(ol.olCreateQueue(device), ol.olDestroyQueue, ol.ErrorCode.INVALID_QUEUE)

    def test_destroy_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            ol.olDestroyQueue(None)

    def test_sync_success_empty_queue(self, queue: Any) -> None:
        ol.olSyncQueue(queue)

    def test_sync_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            ol.olSyncQueue(None)

    def test_query_success_empty_async_queue(self, queue: Any) -> None:
        assert ol.olQueryQueue(queue) is True

    def test_query_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            ol.olQueryQueue(None)

    def test_query_pending_until_host_task(self, capabilities: Any, queue: Any) -> None:
        require(capabilities, "host_functions")
        with BlockedQueue(queue) as task:
            assert ol.olQueryQueue(queue) is False
            assert ol.olGetQueueInfo(queue, Q.EMPTY) is False
            task.trigger()
        assert ol.olQueryQueue(queue) is True
        assert ol.olGetQueueInfo(queue, Q.EMPTY) is True


class TestQueueInfo(InfoQueryRefusals):
    query, valid, subject = "olGetQueueInfo", Q.DEVICE, "queue"

    def test_success_device(self, device: Any, queue: Any) -> None:
        assert ol.olGetQueueInfo(queue, Q.DEVICE) is device

    def test_success_empty(self, queue: Any) -> None:
        assert isinstance(ol.olGetQueueInfo(queue, Q.EMPTY), bool)


class TestQueueInfoSize(InfoQueryRefusals):
    query, valid, subject = "olGetQueueInfoSize", Q.DEVICE, "queue"

    def test_success_device(self, queue: Any) -> None:
        assert ol.olGetQueueInfoSize(queue, Q.DEVICE) == 8  # sizeof(ol_device_handle_t)

    def test_success_empty(self, queue: Any) -> None:
        assert ol.olGetQueueInfoSize(queue, Q.EMPTY) == 1  # sizeof(bool)


# --- olWaitEvents ----------------------------------------------------------------------------

_LAUNCHES = 16


class TestWaitEvents(Base):
    """Program "sequence": each launch computes one Fibonacci number from the two before it, so
    the result is right only if every launch ran after the one it waited for."""

    @pytest.fixture
    def sequence(self, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        require(capabilities, "kernel_launch")
        return kernel(load_program("sequence"), "sequence")

    @pytest.fixture(autouse=True)
    def _needs_events(self, capabilities: Any) -> None:
        require(capabilities, "queues")
        require(capabilities, "events")

    def _run(self, memory: DeviceMemory, queues: list[Any], sequence: Any, data: int, wait_all: bool) -> None:
        device = memory.device
        events: list[Any] = []
        try:
            for i, queue in enumerate(queues):
                if events:
                    ol.olWaitEvents(queue, events if wait_all else events[-1:])
                args = SequenceArgs(i, data)
                ol.olLaunchKernel(queue, device, sequence, bytes(args), launch(1, 1))
                events.append(ol.olCreateEvent(queue))
            ol.olSyncEvent(events[-1])
            for queue in set(queues):
                ol.olSyncQueue(queue)
        finally:
            for event in events:
                ol.olDestroyEvent(event)
        assert memory.u32s(data, len(queues)) == fibonacci(len(queues))

    def _run_on_new_queues(self, memory: DeviceMemory, sequence: Any, data: int, wait_all: bool) -> None:
        """``_run`` with a queue of its own for every launch."""
        queues = [ol.olCreateQueue(memory.device) for _ in range(_LAUNCHES)]
        try:
            self._run(memory, queues, sequence, data, wait_all)
        finally:
            for queue in queues:
                ol.olDestroyQueue(queue)

    @pytest.fixture
    def data(self, device_memory: DeviceMemory) -> int:
        """Room for one uint32 per launch, zeroed (DEVICE memory)."""
        return device_memory.alloc(_LAUNCHES * 4)

    def test_success(self, device_memory: DeviceMemory, sequence: Any, data: int) -> None:
        self._run_on_new_queues(device_memory, sequence, data, wait_all=False)

    def test_success_single_queue(self, device_memory: DeviceMemory, queue: Any, sequence: Any, data: int) -> None:
        self._run(device_memory, [queue] * _LAUNCHES, sequence, data, wait_all=False)

    def test_success_multiple_events(self, device_memory: DeviceMemory, sequence: Any, data: int) -> None:
        self._run_on_new_queues(device_memory, sequence, data, wait_all=True)

    def test_success_empty_list(self, queue: Any) -> None:
        ol.olWaitEvents(queue, [])
        ol.olSyncQueue(queue)

    def test_waits_for_blocked_queue(self, device: Any, capabilities: Any, queue: Any) -> None:
        """A queue that waits on an event of a blocked queue must not run later work."""
        require(capabilities, "host_functions")
        other = ol.olCreateQueue(device)
        ran = threading.Event()
        try:
            with BlockedQueue(queue) as task:
                event = ol.olCreateEvent(queue)
                ol.olWaitEvents(other, [event])
                ol.olLaunchHostFunction(other, lambda _: ran.set(), None)
                time.sleep(0.05)
                assert not ran.is_set(), "work behind olWaitEvents ran before the event completed"
                task.trigger()
            ol.olSyncQueue(other)
            assert ran.is_set()
            ol.olDestroyEvent(event)
        finally:
            ol.olDestroyQueue(other)

    def test_invalid_null_queue(self, queue: Any) -> None:
        event = ol.olCreateEvent(queue)
        try:
            with raises(NULL_HANDLE):
                ol.olWaitEvents(None, [event])
        finally:
            ol.olDestroyEvent(event)

    def test_invalid_null_event(self, queue: Any) -> None:
        with raises(NULL_POINTER):
            ol.olWaitEvents(queue, None)

    def test_invalid_null_inner_event(self, queue: Any) -> None:
        event = ol.olCreateEvent(queue)
        try:
            with raises(NULL_HANDLE):
                ol.olWaitEvents(queue, [event, None])
        finally:
            ol.olDestroyEvent(event)


# --- olLaunchHostFunction --------------------------------------------------------------------


class TestHostFunction(Base):
    @pytest.fixture(autouse=True)
    def _needs_host_functions(self, capabilities: Any) -> None:
        require(capabilities, "host_functions")

    def test_success(self, queue: Any) -> None:
        ol.olLaunchHostFunction(queue, lambda _: None, None)
        ol.olSyncQueue(queue)

    def test_success_user_data(self, queue: Any) -> None:
        got: list[Any] = []
        marker = object()
        ol.olLaunchHostFunction(queue, got.append, marker)
        ol.olSyncQueue(queue)
        assert got == [marker]

    def test_success_sequence(self, queue: Any) -> None:
        values = [0] * 14

        def step(index: int) -> None:
            values[index] = index if index < 2 else values[index - 1] + values[index - 2]

        for i in range(14):
            ol.olLaunchHostFunction(queue, step, i)
        ol.olSyncQueue(queue)
        assert values == fibonacci(14)

    def test_success_blocking(
        self, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any], device_memory: DeviceMemory
    ) -> None:
        """olLaunchHostFunctionKernelTest.SuccessBlocking: a kernel queued behind a spinning host
        callback must not run until the callback returns."""
        require(capabilities, "kernel_launch")
        foo = kernel(load_program("foo"), "foo")
        data = device_memory.alloc(64 * 4, fill=0xFF)
        with BlockedQueue(queue) as task:
            ol.olLaunchKernel(queue, device, foo, ptr_arg(data), launch())
            assert task.started.wait(10), "the host callback did not start"
            time.sleep(0.2)
            assert device_memory.u32s(data, 64) == [0xFFFFFFFF] * 64, "the kernel ran before the host callback returned"
            task.trigger()
        assert device_memory.u32s(data, 64) == list(range(64))

    def test_between_kernels(
        self, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any], alloc: Callable[..., int]
    ) -> None:
        """A host function sees the kernels before it done, and the kernels after it see what it
        wrote: ``sequence`` steps 0 and 1, the function (reads [0, 1], writes 5 over step 1), step 2.
        The function reads and writes the memory itself: MANAGED memory."""
        require(capabilities, "kernel_launch")
        step = kernel(load_program("sequence"), "sequence")
        inout = alloc(4 * 4, ol.AllocType.MANAGED)
        ctypes.memset(inout, 0, 4 * 4)
        ol.olLaunchKernel(queue, device, step, bytes(SequenceArgs(0, inout)), launch(1, 1))
        ol.olLaunchKernel(queue, device, step, bytes(SequenceArgs(1, inout)), launch(1, 1))
        seen: list[list[int]] = []

        def between(_: Any) -> None:
            seen.append(u32s(inout, 2))
            ctypes.c_uint32.from_address(inout + 4).value = 5

        ol.olLaunchHostFunction(queue, between, None)
        ol.olLaunchKernel(queue, device, step, bytes(SequenceArgs(2, inout)), launch(1, 1))
        ol.olSyncQueue(queue)
        assert seen == [[0, 1]], "the host function ran before the kernels queued ahead of it were done"
        assert u32s(inout, 3) == [0, 5, 5], "a kernel queued behind the host function did not see its write"

    def test_every_error_kept(self, queue: Any) -> None:
        """Every failing host function is reported, in order, by the next sync (none dropped; the
        functions between and after them still run); the sync after that reports nothing."""
        ran: list[str] = []

        def fail(what: str) -> None:
            ran.append(what)
            raise ValueError(what)

        ol.olLaunchHostFunction(queue, fail, "first failure")
        ol.olLaunchHostFunction(queue, ran.append, "between")
        ol.olLaunchHostFunction(queue, fail, "second failure")
        ol.olLaunchHostFunction(queue, ran.append, "after")
        with pytest.raises(ol.OffloadError) as info:
            ol.olSyncQueue(queue)
        details = [error.details for error in info.value.errors]
        assert len(details) == 2 and "first failure" in details[0] and "second failure" in details[1], details
        assert ran == ["first failure", "between", "second failure", "after"]
        ol.olSyncQueue(queue)

    def test_final_shutdown_inside_drops_what_is_behind(self, device: Any) -> None:
        """The final ``olShutDown`` called from a host function (hookspecs ``synchronize`` with
        ``release`` from the queue's own function): it returns, the host functions queued behind
        are dropped, no thread of the backend is left, and a new session starts. In a child
        process (this session holds a reference); the backend must be installed (an entry point)."""
        result = run_script(device, _SHUTDOWN_INSIDE)
        assert result == {"returned": True, "ran": ["shut down"], "threads": [], "again": True}, result

    def test_invalid_null_callback(self, queue: Any) -> None:
        with raises(NULL_POINTER):
            ol.olLaunchHostFunction(queue, None, None)

    def test_invalid_null_queue(self) -> None:
        with raises(NULL_HANDLE):
            ol.olLaunchHostFunction(None, lambda _: None, None)
