"""offload's CUDA backend sharing one device and its primary context with other CUDA libraries
(issue 15, part C): cuda.core (``cuda-core`` from PyPI, installed by scripts/test.sh) interleaved
with offload in one process, arrays exchanged through DLPack both ways with their data checked;
and another context made current (``cuCtxCreate`` / ``cuCtxPushCurrent``) between offload calls.

Everything runs in child processes, on the simulated driver (tests/simulators), which models the
driver calls cuda.core makes (libraries, ``cuLaunchKernelEx``, stream-ordered pools, stream
queries; tests/cuda/test_cuda_simulator_sharing_rules.py tests them with raw calls), or on a real one
(scripts/cuda-real.sh).
"""

from __future__ import annotations

from typing import Any

from cuda_child import PRELUDE, mixed_child


_WITH_CUDA_CORE = (
    PRELUDE
    + r"""
import numpy as np
import cuda.bindings
from cuda.bindings import driver as d
from offload_cuda._driver import adapt
d = adapt(d, cuda.bindings.__version__)  # cuCtxCreate below is CUDA 13's (cuCtxCreate_v4 in bindings 12)
from cuda.core import Device, LaunchConfig, ObjectCode, launch
from cuda.core.utils import StridedMemoryView

out = {}
n = 1024
x = np.arange(n, dtype=np.float32)
saxpy_image = image("saxpy")

def host_copy(address, nbytes):
    # a synchronous device-to-host copy by raw driver call (neither library's copy path)
    back = np.empty(nbytes // 4, dtype=np.float32)
    assert int(d.cuMemcpyDtoH(back.ctypes.data, address, nbytes)[0]) == 0
    return back

# offload first: its backend retains the device's primary context; it allocates and copies
gpu = ol.devices("cuda")[0]
dx = ol.to_device(x, gpu)
# cuda.core on the same device: the same primary context
dev = Device(0)
dev.set_current()
out["same_context"] = int(d.cuCtxGetCurrent()[1]) == int(dev.context.handle)
stream = dev.create_stream()
kernel = ObjectCode.from_cubin(saxpy_image).get_kernel("saxpy")

# offload Array -> cuda.core (DLPack): a view of offload's memory, read by cuda.core's kernel
view = StridedMemoryView.from_dlpack(dx, stream_ptr=int(stream.handle))
out["view"] = [view.ptr == dx.address, list(view.shape), str(view.dtype), view.device_id]
ybuf = dev.allocate(n * 4, stream=stream)  # stream-ordered pool memory
ybuf.fill(np.uint32(0x3F800000), stream=stream)  # 1.0f
launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), kernel, np.float32(2.0), view.ptr, ybuf, np.uint64(n))
stream.sync()
out["core_kernel_on_offload_memory"] = bool(np.array_equal(host_copy(int(ybuf.handle), n * 4), 2 * x + 1))

# cuda.core memory -> offload (DLPack): an Array over cuda.core's buffer, written by offload's kernel
dy = ol.from_dlpack(StridedMemoryView.from_buffer(ybuf, shape=(n,), dtype=np.dtype(np.float32)))
out["imported"] = [dy.address == int(ybuf.handle), list(dy.shape), str(dy.dtype), dy.device.id]
with gpu.load_program(saxpy_image) as program, gpu.queue() as queue:
    queue.launch(program.kernel("saxpy"), (n + 255) // 256, 256, np.float32(3.0), dx, dy, np.uint64(n))
    queue.sync()
# cuda.core copies the result (its own copy path) into a second pool buffer, read back raw
copied = dev.allocate(n * 4, stream=stream)
ybuf.copy_to(copied, stream=stream)
stream.sync()
out["offload_kernel_on_core_memory"] = bool(np.array_equal(host_copy(int(copied.handle), n * 4), 5 * x + 1))

# interleaved again: offload work after cuda.core's, on its own memory
dz = ol.to_device(x * 2, gpu)
out["offload_after_core"] = bool(np.array_equal(dz.to_numpy(), x * 2))
del dy
copied.close(stream)
ybuf.close(stream)
stream.sync()
out["pool_used_after_close"] = dev.memory_resource.attributes.used_mem_current
stream.close()
del view, dx, dz
import gc; gc.collect()
free, total = d.cuMemGetInfo()[1:]
out["device_memory_in_use"] = total - free
emit(out)
"""
)


def test_offload_and_cuda_core_share_the_device_and_exchange_arrays(beside_cuda_core: Any, simulator: Any) -> None:
    out = beside_cuda_core(_WITH_CUDA_CORE)
    assert out["same_context"] is True
    assert out["view"] == [True, [1024], "float32", 0]
    assert out["core_kernel_on_offload_memory"] is True
    assert out["imported"] == [True, [1024], "float32", "cuda:0"]
    assert out["offload_kernel_on_core_memory"] is True
    assert out["offload_after_core"] is True
    assert out["pool_used_after_close"] == 0
    if simulator is not None:  # a real device's memory is also other processes' (and the pool's reserve)
        assert out["device_memory_in_use"] == 0


_OTHER_CONTEXT = mixed_child(
    r"""
ck(d.cuInit(0))
device = ck(d.cuDeviceGet(0))
ck(d.cuDevicePrimaryCtxRetain(device))  # held as another library would (released below)
a = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
# another library creates its own context on the same device: cuCtxCreate makes it current
other = ck(d.cuCtxCreate(None, 0, device))
out["other_is_current"] = int(ck(d.cuCtxGetCurrent())) == int(other)
out["fill"] = error_of(ol.olMemFill, None, a, b"\x11", 256)
back = (ctypes.c_uint8 * 8)()
out["copy"] = error_of(ol.olMemcpy, None, ctypes.addressof(back), host, a, gpu, 4)
out["data"] = list(back)[:4]
# the other library pushes its context again and works on its own stream between offload calls
ck(d.cuCtxPushCurrent(other))
theirs = ck(d.cuStreamCreate(1))
q = ol.olCreateQueue(gpu)  # a stream of the primary context, though another is current
prog = ol.olCreateProgram(gpu, image("foo"))
foo = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
ck(d.cuCtxPushCurrent(other))
out["queued_launch"] = error_of(ol.olLaunchKernel, q, gpu, foo, struct.pack("P", a), launch(1, 64))
ck(d.cuCtxPushCurrent(other))
out["sync"] = error_of(ol.olSyncQueue, q)
ck(d.cuCtxPushCurrent(other))
out["their_stream_query"] = code(d.cuStreamQuery(theirs))
out["read_back"] = error_of(ol.olMemcpy, None, ctypes.addressof(back), host, a, gpu, 8)
out["foo_wrote"] = u32s(ctypes.addressof(back), 2)
# the other context ends (destroyed while current: popped) between offload calls
ck(d.cuCtxPushCurrent(other))
ck(d.cuStreamDestroy(theirs))
ck(d.cuCtxDestroy(other))
out["free"] = error_of(ol.olMemFree, a)
out["destroy"] = [error_of(ol.olDestroyQueue, q), error_of(ol.olDestroyProgram, prog)]
ck(d.cuDevicePrimaryCtxRelease(device))
out["shutdown"] = error_of(ol.olShutDown)
flags, active = ck(d.cuDevicePrimaryCtxGetState(device))
out["primary_active_after_shutdown"] = active
emit(out)
"""
)


def test_another_context_current_between_offload_calls(run_child: Any, child_env: Any, kernels: Any) -> None:
    """A backend that remembered the current context per thread would launch on its primary-context
    stream while the created context is current (the driver refuses: the stream is not the current
    context's) and free under the wrong context; this one asks cuCtxGetCurrent each time."""
    child = run_child(_OTHER_CONTEXT, child_env(kernels=kernels))
    out = child.result
    assert out["other_is_current"] is True
    assert out["fill"] is None and out["copy"] is None and out["data"] == [0x11] * 4
    assert out["queued_launch"] is None and out["sync"] is None
    assert out["their_stream_query"] == 0
    assert out["read_back"] is None and out["foo_wrote"] == [0, 1]
    assert out["free"] is None and out["destroy"] == [None, None]
    assert out["shutdown"] is None
    assert out["primary_active_after_shutdown"] == 0  # every retain was released
    assert "gpusim: leak" not in child.stderr, child.stderr
