"""The CUDA backend and host functions against the driver rules the strict simulator models (issue
15, part B): the driver refuses CUDA calls from a host function (CUDA_ERROR_NOT_PERMITTED; a real
driver may deadlock), so olMemFree, olDestroyProgram, the final olShutDown and queue calls made
there must not reach it; every host function failure is kept, in order."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import DRIVER_PRELUDE, PRELUDE, offload_child
from helpers import queue_calls_from_host_function, release_from_host_function, shutdown_from_host_function

pytestmark = pytest.mark.usefixtures("simulated")


_HOST_ERRORS = offload_child(
    r"""
q = ol.olCreateQueue(gpu)

def fail(message):
    def fn(_):
        raise RuntimeError(message)
    return fn

def outcome(call, *args):
    try:
        call(*args)
    except ol.OffloadError as exc:  # a joined error keeps every one in .errors
        return [[e.code.name, e.details] for e in (exc.errors or [exc])]
    return []

ol.olLaunchHostFunction(q, fail("first"), None)
ol.olLaunchHostFunction(q, fail("second"), None)
out = {"sync": outcome(ol.olSyncQueue, q), "again": outcome(ol.olSyncQueue, q)}
ol.olLaunchHostFunction(q, fail("third"), None)
event = ol.olCreateEvent(q)
out["event"] = outcome(ol.olSyncEvent, event)
out["after_event"] = outcome(ol.olSyncQueue, q)
ol.olDestroyEvent(event)
ol.olDestroyQueue(q)
ol.olShutDown()
emit(out)
"""
)


def test_every_host_function_failure_is_kept_in_order(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_HOST_ERRORS, child_env(kernels=kernels)).result
    assert [code for code, _ in out["sync"]] == ["UNKNOWN", "UNKNOWN"]
    assert "first" in out["sync"][0][1] and "second" in out["sync"][1][1]
    assert out["again"] == []
    assert len(out["event"]) == 1 and "third" in out["event"][0][1]  # the event's queue's errors
    assert out["after_event"] == []


_FROM_HOST_FUNCTION = (
    PRELUDE
    + DRIVER_PRELUDE
    + r"""
import threading
setup()  # this thread keeps the primary context current and retained, to ask cuMemGetInfo
ol.olInit()
gpu = platform_devices()["cuda"][0]
before = ck(d.cuMemGetInfo())[0]
q = ol.olCreateQueue(gpu)
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 1 << 20)
prog = ol.olCreateProgram(gpu, image("foo"))
kernel = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
ol.olLaunchKernel(q, gpu, kernel, struct.pack("P", mem), launch())
"""
    + release_from_host_function("q")
    + r"""
sync = error_of(ol.olSyncQueue, q)
freed = ck(d.cuMemGetInfo())[0] == before
ol.olDestroyQueue(q)
ol.olShutDown()
emit({"seen": seen, "sync": sync, "freed": freed})
"""
)


def test_free_and_destroy_program_from_a_host_function(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_FROM_HOST_FUNCTION, child_env(kernels=kernels), timeout=90).result
    assert out == {"seen": ["ok", "ok"], "sync": None, "freed": True}


_SHUTDOWN_FROM_HOST_FUNCTION = (
    PRELUDE
    + r"""
import threading, time
ol.olInit()
gpu = platform_devices()["cuda"][0]
q = ol.olCreateQueue(gpu)
other = ol.olCreateQueue(gpu)
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 4096)
prog = ol.olCreateProgram(gpu, image("foo"))
event = ol.olCreateEvent(q)
"""
    + shutdown_from_host_function("q")
    + r"""
finished = done.wait(30)
deadline = time.monotonic() + 30  # the deferred teardown runs once shut() has returned
def offload_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("offload-cuda")]
while offload_threads() and time.monotonic() < deadline:
    time.sleep(0.01)
# the teardown released the primary context: nothing of offload is left on the device
from cuda.bindings import driver as d
active = d.cuDevicePrimaryCtxGetState(d.cuDeviceGet(0)[1])[2]
emit({"finished": finished, "result": result, "dropped": dropped, "threads": offload_threads(),
      "context_active": bool(active), "again": error_of(ol.olInit)})
"""
)


def test_the_final_shutdown_from_a_host_function(run_child: Any, child_env: Any, kernels: Any) -> None:
    out = run_child(_SHUTDOWN_FROM_HOST_FUNCTION, child_env(kernels=kernels), timeout=120).result
    assert out == {"finished": True, "result": ["ok"], "dropped": [], "threads": [], "context_active": False,
                   "again": None}


_QUEUE_CALLS_FROM_HOST_FUNCTION = offload_child(queue_calls_from_host_function("gpu"))


def test_queue_calls_from_a_host_function(run_child: Any, child_env: Any, kernels: Any) -> None:
    """Waiting for its own queue is refused (it would never finish); querying, launching on and
    waiting for another queue work; host functions launched on its own queue run after it, their
    failures reported by that queue."""
    out = run_child(_QUEUE_CALLS_FROM_HOST_FUNCTION, child_env(kernels=kernels), timeout=90).result
    assert out["seen"][0][0] == "INVALID_QUEUE" and "cannot wait for its own queue" in out["seen"][0][1]
    assert out["seen"][1:] == [True, "other", "other synced", "nested", "nested again"]
    assert out["error"][0] == "UNKNOWN" and "ValueError: nested failure" in out["error"][1]
