"""The AMDGPU backend on the strict HIP simulator (tests/simulators/hip/README.md, "strict rules"),
each test in a child process: the defects of issue 15 that the lenient simulator hid.

- the API from a host function (olMemFree, olDestroyProgram, the final olShutDown) works as
  hookspecs promise, though HIP refuses HIP calls on a host function's thread;
- host-function failures: every one kept, in order, reported as the host backend does;
- peer copies without peer access (none, or enabling fails), access enabled once per pair;
- olMemRegister returns HIP's device pointer of the registered memory;
- symbol lookup and occupancy select the program's device first;
- 2- and 4-byte fills at addresses HIP's D16 / D32 fills refuse;
- events still alive at the final olShutDown are destroyed.
"""

from __future__ import annotations

from amdgpu_child import DEVICES, programs_prelude
from helpers import ERROR_OF, queue_calls_from_host_function, release_from_host_function, shutdown_from_host_function

PRELUDE = (
    """
import ctypes, struct, threading
from pathlib import Path
import offload as ol
from hip import hip
programs = Path(PROGRAMS)
"""
    + DEVICES
    + """
ONE = ol.KernelLaunchSizeArgs(dimensions=1, num_groups=ol.Dimensions(1, 1, 1),
                              group_size=ol.Dimensions(64, 1, 1), dyn_shared_memory=0)
live_events = ctypes.CDLL("libamdhip64.so").gpusim_hip_live_events
live_events.restype = ctypes.c_long
def free_memory(ordinal=0):
    hip.hipSetDevice(ordinal)
    return int(hip.hipMemGetInfo()[1])
def read(address, size, device=None):
    out = ctypes.create_string_buffer(size)
    ol.olMemcpy(None, ctypes.addressof(out), host, address, device or dev, size)
    return out.raw
def offload_threads():
    return [t for t in threading.enumerate() if t.name.startswith("offload-amdgpu")]
def queue_with_work_to_release(size):
    # (free memory now, a queue, `size` bytes of device memory, the foo program): what a host
    # function on that queue then releases
    before = free_memory()
    queue = ol.olCreateQueue(dev)
    mem = ol.olMemAlloc(dev, ol.AllocType.DEVICE, size)
    return before, queue, mem, ol.olCreateProgram(dev, (programs / "foo.hsaco").read_bytes())
"""
)


def test_free_and_destroy_program_from_a_host_function(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
before, queue, mem, prog = queue_with_work_to_release(1 << 20)
other = ol.olCreateQueue(dev)
kernel = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
ol.olLaunchKernel(queue, dev, kernel, struct.pack("P", mem), ONE)
"""
        + release_from_host_function("queue")
        + """
ol.olSyncQueue(queue)
after = free_memory()
ol.olDestroyQueue(queue)
ol.olDestroyQueue(other)
ol.olShutDown()
emit({"seen": seen, "freed": after == before})
""",
        hip_build.env(),
        timeout=60,
    )
    assert result == {"seen": ["ok", "ok"], "freed": True}


def test_the_final_shutdown_from_a_host_function(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
import time
before, queue, mem, prog = queue_with_work_to_release(4096)
event = ol.olCreateEvent(queue)
"""
        + shutdown_from_host_function("queue")
        + """
assert done.wait(30), "olShutDown from a host function deadlocked"
deadline = time.monotonic() + 30  # the deferred teardown runs once shut() has returned
while offload_threads() and time.monotonic() < deadline:
    time.sleep(0.01)
emit({"result": result, "dropped": dropped, "threads": [t.name for t in offload_threads()],
      "freed": free_memory() == before, "events": live_events()})
""",
        hip_build.env(),
        timeout=90,
    )
    assert result == {"result": ["ok"], "dropped": [], "threads": [], "freed": True, "events": 0}


def test_host_function_failures_are_every_one_kept_in_order(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
queue = ol.olCreateQueue(dev)
def fail(exc):
    def run(_):
        raise exc
    return run
def errors(call, *args):
    try:
        call(*args)
    except ol.OffloadError as exc:
        return [[e.code.name, e.details, type(e.__cause__).__name__] for e in exc.errors]
    return []
ol.olLaunchHostFunction(queue, fail(ValueError("first")), None)
ol.olLaunchHostFunction(queue, lambda _: None, None)
ol.olLaunchHostFunction(queue, fail(MemoryError("second")), None)
ol.olLaunchHostFunction(queue, fail(ol.OffloadError(ol.ErrorCode.INVALID_SIZE, "third")), None)
several = errors(ol.olSyncQueue, queue)
ol.olLaunchHostFunction(queue, fail(KeyError("only")), None)
one = errors(ol.olSyncQueue, queue)
ol.olLaunchHostFunction(queue, fail(RuntimeError("by event")), None)
event = ol.olCreateEvent(queue)
by_event = errors(ol.olSyncEvent, event)
clean = errors(ol.olSyncQueue, queue)
ol.olShutDown()
emit({"several": several, "one": one, "by_event": by_event, "clean": clean})
""",
        hip_build.env(),
        timeout=60,
    )
    several = result["several"]
    assert [code for code, _, _ in several] == ["UNKNOWN", "OUT_OF_RESOURCES", "INVALID_SIZE"]
    assert "ValueError: first" in several[0][1] and several[0][2] == "ValueError"
    assert "MemoryError: second" in several[1][1] and several[1][2] == "MemoryError"
    assert several[2][1] == "third"
    assert len(result["one"]) == 1 and result["one"][0][0] == "UNKNOWN" and "KeyError: 'only'" in result["one"][0][1]
    assert len(result["by_event"]) == 1 and "RuntimeError: by event" in result["by_event"][0][1]
    assert result["clean"] == []


PEER_COPY = """
calls = []
enable = hip.hipDeviceEnablePeerAccess
def counting(peer, flags):
    status = enable(peer, flags)
    calls.append(int(status[0]))
    return status
hip.hipDeviceEnablePeerAccess = counting
a = ol.olMemAlloc(amd[0], ol.AllocType.DEVICE, 4096)
b = ol.olMemAlloc(amd[1], ol.AllocType.DEVICE, 4096)
src = ctypes.create_string_buffer(bytes(i % 251 for i in range(4096)), 4096)
ol.olMemcpy(None, a, amd[0], ctypes.addressof(src), host, 4096)
queue = ol.olCreateQueue(amd[0])
for _ in range(3):
    ol.olMemcpy(None, b, amd[1], a, amd[0], 4096)
    ol.olMemcpy(queue, b, amd[1], a, amd[0], 4096)
ol.olSyncQueue(queue)
same = read(b, 4096, amd[1]) == src.raw
ol.olShutDown()
emit({"same": same, "calls": calls})
"""


def test_peer_copies_without_peer_access_and_access_enabled_once(hip_build, hip_child) -> None:
    env = hip_build.env(GPUSIM_DEVICES="2")
    ok = hip_child(programs_prelude(hip_build, PRELUDE) + PEER_COPY, env, timeout=60)
    absent = hip_child(programs_prelude(hip_build, PRELUDE) + PEER_COPY, {**env, "GPUSIM_HIP_PEER": "0"}, timeout=60)
    failing = hip_child(programs_prelude(hip_build, PRELUDE) + PEER_COPY, {**env, "GPUSIM_HIP_PEER": "fail"}, timeout=60)
    assert ok == {"same": True, "calls": [0]}  # enabled once for the pair, not per copy
    assert absent == {"same": True, "calls": []}  # hipDeviceCanAccessPeer said no: never asked
    assert failing == {"same": True, "calls": [217]}  # tried once, then copies without it


def test_mem_register_returns_the_device_pointer(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
buffer = (ctypes.c_uint32 * 1024)()
address = ctypes.addressof(buffer)
pinned = ol.olMemRegister(dev, address, ctypes.sizeof(buffer), ol.MemoryRegisterFlag.LOCK_MEMORY)
expected = int(hip.hipHostGetDevicePointer(address, 0)[1])
prog = ol.olCreateProgram(dev, (programs / "foo.hsaco").read_bytes())
kernel = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
queue = ol.olCreateQueue(dev)
ol.olLaunchKernel(queue, dev, kernel, struct.pack("P", pinned), ONE)  # device code gets the device pointer
ol.olSyncQueue(queue)
seen = list(buffer[:64])
ol.olMemUnregister(dev, address, 0)
ol.olShutDown()
emit({"pinned_is_device_pointer": pinned == expected, "differs": pinned != address, "seen": seen})
""",
        hip_build.env(),
        timeout=60,
    )
    assert result == {"pinned_is_device_pointer": True, "differs": True, "seen": list(range(64))}


def test_symbols_and_occupancy_select_the_programs_device(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
prog = ol.olCreateProgram(amd[1], (programs / "foo.hsaco").read_bytes())
other = ol.olMemAlloc(amd[0], ol.AllocType.DEVICE, 64)  # device 0 is now HIP's current device
kernel = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
ol.olMemFree(other)  # device 0 current again
size = ol.olCalculateOptimalOccupancy(amd[1], kernel, 0)
ol.olMemFree(ol.olMemAlloc(amd[0], ol.AllocType.DEVICE, 64))
glob = ol.olCreateProgram(amd[1], (programs / "global.hsaco").read_bytes())
ol.olMemFree(ol.olMemAlloc(amd[0], ol.AllocType.DEVICE, 64))
symbol = ol.olGetSymbol(glob, "global", ol.SymbolKind.GLOBAL_VARIABLE)
ol.olShutDown()
emit({"size": size, "global": symbol.size > 0})
""",
        hip_build.env(GPUSIM_DEVICES="2"),
        timeout=60,
    )
    assert result == {"size": 1024, "global": True}


def test_two_and_four_byte_fills_at_any_address(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
mem = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
queue = ol.olCreateQueue(dev)
out = {}
for name, q in (("sync", None), ("queued", queue)):
    ol.olMemFill(None, mem, b"\\0", 64)
    ol.olMemFill(q, mem + 1, b"\\x01\\x02", 8)
    ol.olMemFill(q, mem + 10, b"\\x0a\\x0b\\x0c\\x0d", 8)
    ol.olMemFill(q, mem + 20, b"\\x05\\x06", 4)  # aligned: HIP's D16
    if q is not None:
        ol.olSyncQueue(q)
    out[name] = list(read(mem, 28))
ol.olShutDown()
emit(out)
""",
        hip_build.env(),
        timeout=60,
    )
    expected = [0] + [1, 2] * 4 + [0] + [10, 11, 12, 13] * 2 + [0, 0] + [5, 6] * 2 + [0, 0, 0, 0]
    assert result == {"sync": expected, "queued": expected}


def test_events_alive_at_the_final_shutdown_are_destroyed(hip_build, hip_child) -> None:
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
queue = ol.olCreateQueue(dev)
events = [ol.olCreateEvent(queue) for _ in range(3)]
ol.olDestroyEvent(events[0])
alive = live_events()
ol.olShutDown()
emit({"alive": alive, "after": live_events()})
""",
        hip_build.env(),
        timeout=60,
    )
    assert result == {"alive": 2, "after": 0}


def test_queue_calls_from_a_host_function(hip_build, hip_child) -> None:
    """From a host function: waiting for its own queue is refused (it would never finish), querying
    and waiting for another works, and host functions launched on its own or another queue run,
    their failures reported by the queue they ran on."""
    result = hip_child(
        programs_prelude(hip_build, PRELUDE) + ERROR_OF + queue_calls_from_host_function("dev"),
        hip_build.env(),
        timeout=60,
    )
    own_sync, other_empty, *ran = result["seen"]  # own_sync: [code name, details], or None had it returned
    assert [own_sync[0], *ran] == ["INVALID_QUEUE", "other", "other synced", "nested", "nested again"]
    assert other_empty is True
    assert "ValueError: nested failure" in result["error"][1]


def test_a_kernel_fault_is_reported_and_teardown_completes(hip_build, hip_child) -> None:
    """A trapping kernel (the simulator's sticky hipErrorLaunchFailure): the synchronous launch
    reports it, every later call fails with it instead of hanging or succeeding, and the final
    olShutDown still returns, every release failure joined."""
    result = hip_child(
        programs_prelude(hip_build, PRELUDE)
        + """
queue = ol.olCreateQueue(dev)
out = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 4 * 256)
prog = ol.olCreateProgram(dev, (programs / "fault.hsaco").read_bytes())
kernel = ol.olGetSymbol(prog, "fault", ol.SymbolKind.KERNEL)
four = ol.KernelLaunchSizeArgs(dimensions=1, num_groups=ol.Dimensions(4, 1, 1),
                               group_size=ol.Dimensions(64, 1, 1), dyn_shared_memory=0)
start = ol.olCreateEvent(queue)
staged = ctypes.create_string_buffer(16)
def error(call, *args):
    try:
        call(*args)
    except ol.OffloadError as exc:
        return exc.code.name, "hipErrorLaunchFailure" in exc.details
    return None
res = {"sync_launch": error(ol.olLaunchKernel, None, dev, kernel, struct.pack("PII", out, 256, 1), four),
       "sync": error(ol.olSyncQueue, queue),
       "query": error(ol.olGetQueueInfo, queue, ol.QueueInfo.EMPTY),
       "event": error(ol.olGetEventInfo, start, ol.EventInfo.IS_COMPLETE),
       "launch": error(ol.olLaunchKernel, queue, dev, kernel, struct.pack("PII", out, 256, 99), four),
       "host_function": error(ol.olLaunchHostFunction, queue, lambda _: None, None),
       "copy": error(ol.olMemcpy, None, out, dev, ctypes.addressof(staged), host, 16),
       "alloc": error(ol.olMemAlloc, dev, ol.AllocType.DEVICE, 64)}
try:
    ol.olShutDown()
    res["shutdown"] = None
except ol.OffloadError as exc:
    res["shutdown"] = len(exc.errors) >= 1 and all("hipErrorLaunchFailure" in e.details for e in exc.errors)
emit(res)
""",
        hip_build.env(),
        timeout=60,
    )
    failure = ["BACKEND_FAILURE", True]
    calls = ("sync_launch", "sync", "query", "event", "launch", "host_function", "copy", "alloc")
    assert result == {**dict.fromkeys(calls, failure), "shutdown": True}



_COOPERATIVE = (
    ERROR_OF
    + """
prog = ol.olCreateProgram(dev, (programs / "foo.hsaco").read_bytes())
kernel = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
mem = ol.olMemAlloc(dev, ol.AllocType.MANAGED, 64 * 4)
queue = ol.olCreateQueue(dev)
props = {ol.KernelLaunchPropType.IS_COOPERATIVE: True}
out = {"support": ol.olGetDeviceInfo(dev, ol.DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT),
       "count": error_of(ol.olGetKernelMaxCooperativeGroupCount, dev, kernel, ONE),
       "queued": error_of(ol.olLaunchKernel, queue, dev, kernel, struct.pack("P", mem), ONE, props),
       "sync": error_of(ol.olLaunchKernel, None, dev, kernel, struct.pack("P", mem), ONE, props)}
out["queue"] = error_of(ol.olSyncQueue, queue)
ctypes.memset(mem, 0, 64 * 4)
out["plain"] = error_of(ol.olLaunchKernel, None, dev, kernel, struct.pack("P", mem), ONE)
out["data"] = list((ctypes.c_uint32 * 64).from_address(mem)) == list(range(64))
ol.olDestroyQueue(queue); ol.olMemFree(mem); ol.olDestroyProgram(prog)
ol.olShutDown()
emit(out)
"""
)


def test_cooperative_support_is_the_runtimes_attribute(hip_build, hip_child) -> None:
    """A device without cooperative groups (hipDeviceAttributeCooperativeLaunch 0,
    GPUSIM_HIP_COOPERATIVE=0), where HIP fails the launch as hipErrorLaunchFailure:
    COOPERATIVE_LAUNCH_SUPPORT is False and the group count and cooperative launches are
    UNSUPPORTED naming the attribute, as on CUDA; plain launches run. With it, all of them run."""
    for knob in ("0", "1"):
        out = hip_child(programs_prelude(hip_build, PRELUDE) + _COOPERATIVE, hip_build.env(GPUSIM_HIP_COOPERATIVE=knob), timeout=60)
        assert out["support"] is (knob == "1")
        for what in ("count", "queued", "sync"):
            if knob == "1":
                assert out[what] is None, (what, out[what])
            else:
                code, details = out[what]
                assert code == "UNSUPPORTED" and "hipDeviceAttributeCooperativeLaunch" in details, (what, details)
        assert out["queue"] is None and out["plain"] is None and out["data"] is True
