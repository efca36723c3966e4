"""6.7 event (olCreateEvent, olDestroyEvent, olSyncEvent, olGetEventInfo(Size),
olGetEventElapsedTime)."""

from __future__ import annotations

import time

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import offload as ol

from ._helpers import NULL_HANDLE, Base, BlockedQueue, InfoQueryRefusals, destroyed_twice, kernel, launch, ptr_arg
from ._helpers import DeviceMemory, raises, require, wait_until

E = ol.EventInfo


class _EventBase(Base):
    @pytest.fixture(autouse=True)
    def _needs_events(self, capabilities: Any) -> None:
        require(capabilities, "queues")
        require(capabilities, "events")

    @pytest.fixture
    def event(self, queue: Any) -> Iterator[Any]:
        """OffloadEventTest: an event of ``queue``, after olSyncQueue."""
        created = ol.olCreateEvent(queue)
        ol.olSyncQueue(queue)
        yield created
        ol.olDestroyEvent(created)


class TestEvent(_EventBase):
    def test_create_success(self, queue: Any) -> None:
        created = ol.olCreateEvent(queue)
        assert isinstance(created, ol.Event)
        assert ol.olGetEventInfo(created, ol.EventInfo.QUEUE) is queue, "the event does not name its queue"
        ol.olSyncEvent(created)
        assert ol.olGetEventInfo(created, ol.EventInfo.IS_COMPLETE) is True
        ol.olDestroyEvent(created)

    def test_create_invalid_null_queue(self) -> None:
        with raises(NULL_HANDLE):
            ol.olCreateEvent(None)

    def test_destroy_success(self, queue: Any) -> None:
        created = ol.olCreateEvent(queue)
        ol.olSyncQueue(queue)
        ol.olDestroyEvent(created)

    def test_destroy_twice(self, queue: Any) -> None:
        destroyed_twice(ol.olCreateEvent(queue), ol.olDestroyEvent, ol.ErrorCode.INVALID_EVENT)

    def test_destroy_invalid_null_event(self) -> None:
        with raises(NULL_HANDLE):
            ol.olDestroyEvent(None)

    def test_sync_success(self, queue: Any) -> None:
        created = ol.olCreateEvent(queue)
        ol.olSyncEvent(created)
        ol.olDestroyEvent(created)

    def test_sync_success_multiple_sync(self, queue: Any) -> None:
        created = ol.olCreateEvent(queue)
        for _ in range(10):
            ol.olSyncEvent(created)
        ol.olDestroyEvent(created)

    def test_sync_invalid_null_event(self) -> None:
        with raises(NULL_HANDLE):
            ol.olSyncEvent(None)

    def test_sync_raises_earlier_errors(self, capabilities: Any, queue: Any) -> None:
        """olSyncEvent raises the asynchronous errors of the work queued before the event
        (hookspecs ``sync_event``): a failing host function, then the event."""
        require(capabilities, "host_functions", "makes an asynchronous error with a failing host function")

        def fail(_: Any) -> None:
            raise ValueError("failed before the event")

        ol.olLaunchHostFunction(queue, fail, None)
        created = ol.olCreateEvent(queue)
        try:
            with pytest.raises(ol.OffloadError) as info:
                ol.olSyncEvent(created)
            assert "failed before the event" in str(info.value), f"olSyncEvent raised another error: {info.value}"
        finally:
            ol.olDestroyEvent(created)
            try:
                ol.olSyncQueue(queue)  # the queue may report the error again: it is the same one
            except ol.OffloadError as again:
                assert "failed before the event" in str(again), f"olSyncQueue raised another error: {again}"

    def test_sync_waits_for_earlier_work(self, capabilities: Any, queue: Any) -> None:
        require(capabilities, "host_functions")
        with BlockedQueue(queue) as task:
            created = ol.olCreateEvent(queue)
            assert ol.olGetEventInfo(created, E.IS_COMPLETE) is False, "an event completed before earlier work"
            task.release.set()
            ol.olSyncEvent(created)
            assert ol.olGetEventInfo(created, E.IS_COMPLETE) is True
            task.trigger()
        ol.olDestroyEvent(created)

    def test_event_after_kernel(
        self, device_memory: DeviceMemory, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any]
    ) -> None:
        """olSyncEvent on an event recorded after a launch: the kernel's results are visible."""
        require(capabilities, "kernel_launch")
        foo = kernel(load_program("foo"), "foo")
        data = device_memory.alloc(64 * 4)
        ol.olLaunchKernel(queue, device, foo, ptr_arg(data), launch())
        created = ol.olCreateEvent(queue)
        ol.olSyncEvent(created)
        assert device_memory.u32s(data, 64) == list(range(64))
        ol.olDestroyEvent(created)


class TestEventInfo(_EventBase, InfoQueryRefusals):
    query, valid, subject = "olGetEventInfo", E.QUEUE, "event"

    def test_success_queue(self, queue: Any, event: Any) -> None:
        assert ol.olGetEventInfo(event, E.QUEUE) is queue

    def test_success_is_complete(self, event: Any) -> None:
        assert wait_until(lambda: ol.olGetEventInfo(event, E.IS_COMPLETE) is True), "the event never completed"


class TestEventInfoSize(_EventBase, InfoQueryRefusals):
    query, valid, subject = "olGetEventInfoSize", E.QUEUE, "event"

    def test_success_queue(self, event: Any) -> None:
        assert ol.olGetEventInfoSize(event, E.QUEUE) == 8  # sizeof(ol_queue_handle_t)

    def test_success_is_complete(self, event: Any) -> None:
        assert ol.olGetEventInfoSize(event, E.IS_COMPLETE) == 1  # sizeof(bool)


class TestEventElapsedTime(_EventBase):
    #: ``olCreateEvent``'s flags: none (R1's form); the subclass passes ENABLE_PROFILING.
    FLAGS: tuple[Any, ...] = ()

    @pytest.fixture
    def events(
        self, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any], alloc: Callable[..., int]
    ) -> Iterator[tuple[Any, Any]]:
        """A start event, some work (a ``foo`` launch, else a fill, else none), an end event
        (synchronised)."""
        require(capabilities, "events_elapsed_time")
        began = time.perf_counter()
        start = ol.olCreateEvent(queue, *self.FLAGS)
        if capabilities.kernel_launch:
            foo = kernel(load_program("foo"), "foo")
            ol.olLaunchKernel(queue, device, foo, ptr_arg(alloc(64 * 4)), launch())
        elif capabilities.fill and capabilities.memory:
            ol.olMemFill(queue, alloc(1 << 20, ol.AllocType.DEVICE), b"\x01", 1 << 20)
        end = ol.olCreateEvent(queue, *self.FLAGS)
        ol.olSyncEvent(end)
        self.wall_ms = (time.perf_counter() - began) * 1e3  # bounds the device time from above
        yield start, end
        ol.olDestroyEvent(start)
        ol.olDestroyEvent(end)

    def test_success(self, events: tuple[Any, Any]) -> None:
        """The time between the events is the work between them: not negative, and not longer
        than the host saw from before the first to after the second (1 ms for clock rounding)."""
        elapsed = ol.olGetEventElapsedTime(*events)
        assert isinstance(elapsed, float) and 0.0 <= elapsed <= self.wall_ms + 1.0, (elapsed, self.wall_ms)

    def test_success_multiple_calls(self, events: tuple[Any, Any]) -> None:
        first = ol.olGetEventElapsedTime(*events)
        assert first >= 0.0 and ol.olGetEventElapsedTime(*events) == first  # the events do not move

    def test_invalid_null_start_event(self, events: tuple[Any, Any]) -> None:
        with raises(NULL_HANDLE):
            ol.olGetEventElapsedTime(None, events[1])

    def test_invalid_null_end_event(self, events: tuple[Any, Any]) -> None:
        with raises(NULL_HANDLE):
            ol.olGetEventElapsedTime(events[0], None)


class TestEventElapsedTimeProfiling(TestEventElapsedTime):
    """olGetEventElapsedTimeTest as upstream main writes it: both events created with
    ``EventFlags.ENABLE_PROFILING`` (Success, SuccessMultipleCalls, InvalidNullStartEvent,
    InvalidNullEndEvent). InvalidNonProfilingEvent needs API level main: ``_main_level``."""

    FLAGS = (ol.EventFlags.ENABLE_PROFILING,)
