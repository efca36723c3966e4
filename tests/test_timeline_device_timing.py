"""How the timeline times device work (``OFFLOAD_TRACE=perfetto``): by backend events (the host
queue's own stamps on the compiled path) behind a busy queue, and for a backend without events by
completion callbacks, or marked unknown."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from helpers import HOST_CHILD_PRELUDE

from timeline_checks import WORK, check_trace_event_format, run_job, spans_of


BLOCKED_JOB = r"""
import struct, threading
""" + HOST_CHILD_PRELUDE + r"""
program, kernel = load_kernel("noargs")
gate = threading.Event()
queue = ol.olCreateQueue(host)
ol.olLaunchHostFunction(queue, lambda _: gate.wait(), None)
for _ in range(3):
    ol.olLaunchKernel(queue, host, kernel, None, ol.KernelLaunchSizeArgs(1, (2, 1, 1), (1, 1, 1)))
start = ol.olCreateEvent(queue)
ol.olLaunchKernel(queue, host, kernel, None, ol.KernelLaunchSizeArgs(1, (2, 1, 1), (1, 1, 1)))
gate.set()
ol.olSyncQueue(queue)
ol.olDestroyEvent(start)
ol.olDestroyQueue(queue)
ol.olDestroyProgram(program)
ol.olShutDown()
"""


def test_work_behind_a_busy_queue_is_timed_by_backend_events(run_python: Any, tmp_path: pathlib.Path) -> None:
    """Work still queued when its call returned gets its end from the tracer's backend events (on
    the compiled path, from the host queue's own stamp)."""
    from offload._core.native import ENABLED

    events = check_trace_event_format(run_job(run_python, tmp_path / "blocked.json", BLOCKED_JOB))
    work = spans_of(events, WORK)
    assert [w["cat"] for w in work] == ["host_function", "kernel", "kernel", "kernel", "event_record", "kernel"]
    timing = "queue stamp" if ENABLED else "backend events"
    assert all(w["args"]["timing"] == timing for w in work), [w["args"]["timing"] for w in work]
    (sync,) = [c for c in spans_of(events, {"api"}) if c["name"] == "olSyncQueue"]
    for w in work:  # the event clock maps onto the API clock: all done by the time olSyncQueue returned
        assert w["ts"] + w["dur"] <= sync["ts"] + sync["dur"] + 1e-3
    blocker = work[0]
    assert work[1]["ts"] >= blocker["ts"] + blocker["dur"] - 1e-3
    for before, after in zip(work, work[1:]):
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-3


DEFERRED_JOB = r"""
import ctypes
import offload as ol

class Deferred:
    '''A device whose queue runs its work only at synchronize (no events).'''

    @ol.hookimpl
    def init(self):
        self.memory = {}
        return ["dev"]

    @ol.hookimpl
    def deinit(self):
        pass

    @ol.hookimpl
    def get_device_info(self, device):
        return {ol.DeviceInfo.NAME: "deferred"}

    @ol.hookimpl
    def load_binary(self, device, data):
        return data

    @ol.hookimpl
    def unload_binary(self, device, image):
        pass

    @ol.hookimpl
    def create_queue(self, device):
        return []

    @ol.hookimpl
    def synchronize(self, device, queue, release):
        while queue:
            queue.pop(0)()

    @ol.hookimpl
    def has_pending_work(self, device, queue):
        return bool(queue)

    @ol.hookimpl
    def mem_alloc(self, device, alloc_type, size):
        buf = ctypes.create_string_buffer(size)
        self.memory[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    @ol.hookimpl
    def mem_free(self, device, address):
        del self.memory[address]

    @ol.hookimpl
    def data_fill(self, device, address, pattern, size, queue):
        job = lambda: ctypes.memmove(address, pattern * (size // len(pattern)), size)
        job() if queue is None else queue.append(job)

class DeferredWithHostCalls(Deferred):
    @ol.hookimpl
    def enqueue_host_call(self, device, queue, callback):
        queue.append(callback)

ol.register_backend("deferred", DeferredWithHostCalls if WITH_HOST_CALLS else Deferred)
import os
os.environ["OFFLOAD_BACKENDS"] = "deferred"
os.environ["OFFLOAD_BACKENDS_STRICT"] = "1"
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
(device,) = found
queue = ol.olCreateQueue(device)
ptr = ol.olMemAlloc(device, ol.AllocType.DEVICE, 64)
ol.olMemFill(queue, ptr, b"\x01", 64)
ol.olSyncQueue(queue)
ol.olDestroyQueue(queue)
ol.olMemFree(ptr)
ol.olShutDown()
"""


@pytest.mark.parametrize(("host_calls", "timing"), [(True, "completion callback"), (False, "unknown")])
def test_backends_without_events_are_timed_by_callbacks_or_marked_unknown(
    host_calls: bool, timing: str, run_python: Any, tmp_path: pathlib.Path
) -> None:
    code = f"WITH_HOST_CALLS = {host_calls}\n" + DEFERRED_JOB
    events = check_trace_event_format(run_job(run_python, tmp_path / "deferred.json", code))
    (fill,) = spans_of(events, {"fill"})
    assert fill["args"]["timing"] == timing and fill["args"]["bytes"] == 64
    (sync,) = [c for c in spans_of(events, {"api"}) if c["name"] == "olSyncQueue"]
    if host_calls:  # the deferred queue ran the fill inside olSyncQueue, and the callback right after it
        assert sync["ts"] - 1e-3 <= fill["ts"] + fill["dur"] <= sync["ts"] + sync["dur"] + 1e-3
    else:
        assert fill["dur"] == 0
