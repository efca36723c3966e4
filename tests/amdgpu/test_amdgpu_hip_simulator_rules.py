"""The simulated HIP runtime's strict rules, through raw hip-python calls (no offload), each in a
child process: what tests/simulators/hip/README.md lists under "strict rules", one test per rule
(launches: test_amdgpu_hip_simulator_launch_rules.py; memory: ..._memory_rules.py).

Each of these passed on the lenient simulator that came before (a test that cannot fail there
would not show the rule): HIP calls from a host function, peer access that is absent or fails,
the push buffer, events left alive.
"""

from __future__ import annotations

from amdgpu_child import RAW_PRELUDE as PRELUDE

HIP_ERROR_ILLEGAL_STATE = 401


def test_hip_calls_from_a_host_function_are_refused(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
seen = {}
ptr = hip.hipMalloc(64)[1]
stream = hip.hipStreamCreateWithFlags(1)[1]
def inside(_):
    seen["malloc"] = st(hip.hipMalloc(16))
    seen["free"] = st(hip.hipFree(ptr))
    seen["query"] = st(hip.hipStreamQuery(stream))
    seen["launch"] = launch_host_func(stream, fn)
fn = HOST_FN(inside)
launched = launch_host_func(stream, fn)
synced = st(hip.hipStreamSynchronize(stream))
after = st(hip.hipFree(ptr))  # the same call outside a host function works
emit({"launched": launched, "synced": synced, "seen": seen, "after": after})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result["launched"] == 0 and result["synced"] == 0 and result["after"] == 0
    assert result["seen"] == {k: HIP_ERROR_ILLEGAL_STATE for k in ("malloc", "free", "query", "launch")}


PEERS = """
out = {"can": int(hip.hipDeviceCanAccessPeer(0, 1)[1])}
hip.hipSetDevice(0)
out["enable"] = [st(hip.hipDeviceEnablePeerAccess(1, 0)), st(hip.hipDeviceEnablePeerAccess(1, 0))]
a = hip.hipMalloc(4096)[1]
hip.hipSetDevice(1)
b = hip.hipMalloc(4096)[1]
src = (ctypes.c_ubyte * 4096)(*[i % 251 for i in range(4096)])
dst = (ctypes.c_ubyte * 4096)()
hip.hipSetDevice(0)
out["htod"] = st(hip.hipMemcpyHtoD(a, src, 4096))
out["peer"] = st(hip.hipMemcpyPeer(b, 1, a, 0, 4096))  # needs no peer access
out["peer_async"] = st(hip.hipMemcpyPeerAsync(b, 1, a, 0, 2048, None))
out["sync"] = st(hip.hipStreamSynchronize(None))
hip.hipSetDevice(1)
out["dtoh"] = st(hip.hipMemcpyDtoH(dst, b, 4096))
out["same"] = bytes(dst) == bytes(src)
emit(out)
"""


def test_peer_access_may_be_absent_or_fail_and_peer_copies_still_work(hip_runtime, hip_child) -> None:
    env = {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_DEVICES": "2"}
    ok = hip_child(PRELUDE + PEERS, env)
    absent = hip_child(PRELUDE + PEERS, {**env, "GPUSIM_HIP_PEER": "0"})
    failing = hip_child(PRELUDE + PEERS, {**env, "GPUSIM_HIP_PEER": "fail"})
    assert ok["can"] == 1 and ok["enable"] == [0, 704]  # hipErrorPeerAccessAlreadyEnabled
    assert absent["can"] == 0 and absent["enable"] == [101, 101]  # hipErrorInvalidDevice
    assert failing["can"] == 1 and failing["enable"] == [217, 217]  # hipErrorPeerAccessUnsupported
    for result in (ok, absent, failing):
        assert {k: result[k] for k in ("htod", "peer", "peer_async", "sync", "dtoh")} == dict.fromkeys(
            ("htod", "peer", "peer_async", "sync", "dtoh"), 0
        )
        assert result["same"]


def test_the_push_buffer_blocks_the_enqueuing_call(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
gate = threading.Event()
fn = HOST_FN(lambda _: gate.wait(60))
stream = hip.hipStreamCreateWithFlags(1)[1]
p = hip.hipMalloc(64)[1]
done = []
launch_host_func(stream, fn)
def enqueue():
    for _ in range(20):
        done.append(st(hip.hipMemsetD8Async(p, 1, 8, stream)))
thread = threading.Thread(target=enqueue)
thread.start()
thread.join(2)  # a hang guard only: the enqueuer must still be blocked after this
blocked_at = len(done)
gate.set()
thread.join(60)
emit({"blocked_at": blocked_at, "done": done, "sync": st(hip.hipStreamSynchronize(stream))})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_PUSH_BUFFER": "8"},
    )
    assert result["blocked_at"] <= 8  # the host function and at most 7 fills fit; the rest waited
    assert result["done"] == [0] * 20 and result["sync"] == 0


def test_events_are_counted_until_destroyed(hip_runtime, hip_child) -> None:
    result = hip_child(
        PRELUDE
        + """
live = ctypes.CDLL("libamdhip64.so").gpusim_hip_live_events
live.restype = ctypes.c_long
a, b = hip.hipEventCreate()[1], hip.hipEventCreateWithFlags(2)[1]
two = live()
hip.hipEventDestroy(a)
emit({"two": two, "one": live(), "again": st(hip.hipEventDestroy(b)), "zero": live()})
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    assert result == {"two": 2, "one": 1, "again": 0, "zero": 0}
