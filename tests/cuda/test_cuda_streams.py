"""Streams shared with cuda.core both ways (issue 32, part 1), in one child process on the
simulated driver: cuda.core launches on an offload Queue (``Queue.__cuda_stream__``) and offload
launches on a cuda.core Stream (``Queue.from_stream``). Ordering is checked by data: each side's
work sits behind a gate (a host function that blocks, on the shared stream or one it waits for), so
nothing enqueued may have run before the gate opens, and the results need the enqueued order (one
library's fill, the other's accumulating kernel, a copy back): work that went to any other stream
runs early and is seen.

Without cuda.core, the flat doors (``offload.queue_stream`` / ``offload.adopt_stream``) are
tested with raw driver streams, and their refusals everywhere.
"""

from __future__ import annotations

from typing import Any

from cuda_child import PRELUDE, mixed_child

_BOTH_WAYS = (
    PRELUDE
    + r"""
import threading
import numpy as np
from cuda.core import Device, LaunchConfig, ObjectCode, launch
import offload.objects as oo

out = {}
n = 1024
x = np.arange(n, dtype=np.float32)
gpu = ol.devices("cuda")[0]
dev = Device(0)
dev.set_current()
kernel = ObjectCode.from_cubin(image("saxpy")).get_kernel("saxpy")
config = LaunchConfig(grid=(n + 255) // 256, block=256)
ONE = b"\x00\x00\x80\x3f"  # 1.0f

def pinned(nbytes):
    # page-locked host memory: an asynchronous copy into it returns at once (pageable would wait)
    buf = gpu.alloc(nbytes, "host")
    view = np.frombuffer((ctypes.c_float * (nbytes // 4)).from_address(buf.address), dtype=np.float32)
    view[:] = -1.0
    return buf, view

# 1. cuda.core launches on an offload queue (__cuda_stream__)
dx = ol.to_device(x, gpu)
dy = ol.to_device(np.zeros(n, dtype=np.float32), gpu)
hb, back = pinned(n * 4)
q = gpu.queue()
out["protocol"] = [q.__cuda_stream__()[0], q.__cuda_stream__()[1] == q.raw_stream, q.raw_stream != 0]
gate = threading.Event()
q.host_function(gate.wait, 60)       # offload: the stream waits here (a bug fails, never hangs)
dy.buffer.fill(ONE, queue=q)         # offload: y = 1
launch(q, config, kernel, np.float32(2.0), dx.address, dy.address, np.uint64(n))  # cuda.core: y = 2x + y
q.copy(hb, dy)                       # offload: back = y
out["core_waited"] = bool((back == -1.0).all())
wrapped = dev.create_stream(q)       # cuda.core's Stream over offload's stream: the same handle
out["wrapped_same"] = int(wrapped.handle) == q.raw_stream
gate.set()
q.sync()
out["core_on_offload"] = bool(np.array_equal(back, 2 * x + 1))

# 2. offload launches on a cuda.core stream (Queue.from_stream)
from cuda.core.utils import StridedMemoryView
s = dev.create_stream()
ybuf = dev.allocate(n * 4, stream=s)
s.sync()
dy2 = ol.from_dlpack(StridedMemoryView.from_buffer(ybuf, shape=(n,), dtype=np.dtype(np.float32)))
hb2, back2 = pinned(n * 4)
program = gpu.load_program(image("saxpy"))
saxpy = program.kernel("saxpy")
q2 = oo.Queue.from_stream(s, gpu)
out["adopted_same"] = q2.raw_stream == int(s.handle)
gate2 = threading.Event()
q3 = gpu.queue()
q3.host_function(gate2.wait, 60)     # another offload queue waits here, and cuda.core's stream after it
ol.foreign_stream_wait(int(s.handle), q3.record())
ybuf.fill(np.uint32(0x3F800000), stream=s)  # cuda.core: y = 1
q2.launch(saxpy, (n + 255) // 256, 256, np.float32(3.0), dx, dy2, np.uint64(n))  # offload: y = 3x + y
q2.copy(hb2, dy2)                    # offload: back2 = y
out["offload_waited"] = bool((back2 == -1.0).all())
gate2.set()
s.sync()                             # cuda.core's sync covers offload's work on its stream
out["offload_on_core"] = bool(np.array_equal(back2, 3 * x + 1))
q2.close()                           # lets go of the stream without destroying it
out["stream_alive"] = (s.sync() is None)
program.close()
del dy2
ybuf.close(s)
s.close()
q.close()
q3.close()
hb.close(); hb2.close()
del dx, dy
import gc; gc.collect()
emit(out)
"""
)


def test_cuda_core_and_offload_launch_on_each_others_streams(beside_cuda_core: Any) -> None:
    out = beside_cuda_core(_BOTH_WAYS)
    assert out["protocol"] == [0, True, True]
    assert out["core_waited"] is True and out["wrapped_same"] is True
    assert out["core_on_offload"] is True
    assert out["adopted_same"] is True and out["offload_waited"] is True
    assert out["offload_on_core"] is True
    assert out["stream_alive"] is True


_FLAT = mixed_child(
    r"""
device, primary = setup()            # the owner holds the primary context, as a library would
theirs = ck(d.cuStreamCreate(1))
q = ol.adopt_stream(gpu, int(theirs))
out["same"] = ol.queue_stream(q) == int(theirs)
a = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
ol.olMemFill(q, a, b"\x5a", 256)
back = (ctypes.c_uint8 * 4)()
ol.olMemcpy(q, ctypes.addressof(back), host, a, gpu, 4)
ck(d.cuStreamSynchronize(theirs))   # the owner's sync covers offload's work
out["data"] = list(back)
ol.olDestroyQueue(q)
out["stream_alive"] = code(d.cuStreamQuery(theirs))  # not destroyed by offload
q2 = ol.olCreateQueue(gpu)           # never the adopted one reused
out["fresh"] = ol.queue_stream(q2) != int(theirs)
import threading
gate = threading.Event()
busy = ol.adopt_stream(gpu, int(theirs))
ol.olLaunchHostFunction(busy, lambda _: gate.wait(30))
t0 = __import__("time").monotonic()
ol.olDestroyQueue(busy)              # busy: held (parked) until idle, without waiting here
out["destroy_returned_at_once"] = __import__("time").monotonic() - t0 < 5
gate.set()
ck(d.cuStreamSynchronize(theirs))
reused = [ol.olCreateQueue(gpu) for _ in range(3)]  # a parked adopted queue is let go, never handed out
out["never_reused"] = all(ol.queue_stream(r) != int(theirs) for r in reused)
for r in reused:
    ol.olDestroyQueue(r)
out["alive_after_release"] = code(d.cuStreamQuery(theirs))
other = ck(d.cuCtxCreate(None, 0, device))   # another context on the device, made current
elsewhere = ck(d.cuStreamCreate(1))
out["other_context"] = error_of(ol.adopt_stream, gpu, int(elsewhere))
ck(d.cuStreamDestroy(elsewhere))
ck(d.cuCtxDestroy(other))
ck(d.cuCtxSetCurrent(primary))
out["not_int"] = error_of(ol.adopt_stream, gpu, "stream")
out["host_queue"] = error_of(ol.queue_stream, ol.olCreateQueue(host))
out["host_adopt"] = error_of(ol.adopt_stream, host, int(theirs))
out["dead_device"] = error_of(ol.adopt_stream, None, int(theirs))
class V1:
    def __cuda_stream__(self):
        return (1, int(theirs))
out["protocol_version"] = error_of(ol.adopt_stream, gpu, V1())
ol.olDestroyQueue(q2)
ol.olMemFree(a)
ol.olShutDown()
out["after_shutdown"] = code(d.cuStreamQuery(theirs))
ck(d.cuStreamDestroy(theirs))
ck(d.cuDevicePrimaryCtxRelease(device))
emit(out)
"""
)


def test_flat_stream_doors_with_a_raw_driver_stream(run_child: Any, child_env: Any, kernels: Any) -> None:
    child = run_child(_FLAT, child_env(kernels=kernels))
    out = child.result
    assert out["same"] is True and out["data"] == [0x5A] * 4
    assert out["stream_alive"] == 0 and out["fresh"] is True
    assert out["destroy_returned_at_once"] is True and out["never_reused"] is True and out["alive_after_release"] == 0
    assert out["other_context"] is not None and out["other_context"][0] == "INVALID_ARGUMENT"
    assert "another context" in out["other_context"][1]
    assert out["not_int"] is not None and out["not_int"][0] == "INVALID_ARGUMENT"
    assert out["host_queue"] is not None and out["host_queue"][0] == "UNSUPPORTED"
    assert out["host_adopt"] is not None and out["host_adopt"][0] == "UNSUPPORTED"
    assert out["dead_device"] is not None and out["dead_device"][0] == "INVALID_DEVICE"
    assert out["protocol_version"] is not None and out["protocol_version"][0] == "INVALID_ARGUMENT"
    assert out["after_shutdown"] == 0  # the stream outlives the session that adopted it
