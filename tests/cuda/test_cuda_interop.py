"""GPU array interop on the (simulated) CUDA driver: ``__cuda_array_interface__`` v3 out of an
Array and into ``offload.from_cuda_array_interface`` / ``as_array``; device memory of another
library (raw driver allocations, as CuPy or Numba make them) copied by offload through CAI and
DLPack; and DLPack's ``stream=``: the consumer's stream waits for an event recorded after the
layer's queued work, while the host does not wait. The consumer side is a small reader of the
two specifications written with raw cuda.bindings calls.
"""

from __future__ import annotations

from typing import Any

import pytest

PRELUDE = """
import gc, json, struct, time
import numpy as np
import offload
from cuda.bindings import driver as cu

def ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert int(err) == 0, err
    return rest[0] if len(rest) == 1 else rest

(device,) = offload.devices("cuda")
ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
ok(cu.cuCtxSetCurrent(ctx))

def read_device(address, nbytes):
    out = bytearray(nbytes)
    ok(cu.cuMemcpyDtoH(out, address, nbytes))
    return bytes(out)

class Producer:
    '''Another library's array: raw cuMemAlloc memory, exported by the CUDA array interface v3.'''
    def __init__(self, values, stream=None):
        data = np.ascontiguousarray(values)
        self.address = int(ok(cu.cuMemAlloc(data.nbytes)))
        ok(cu.cuMemcpyHtoD(self.address, data.tobytes(), data.nbytes))
        self.cai = {"shape": data.shape, "typestr": data.dtype.str, "data": (self.address, False),
                    "version": 3, "strides": None, "stream": stream}
        self.freed = False
    @property
    def __cuda_array_interface__(self):
        return self.cai
    def __del__(self):
        ok(cu.cuMemFree(self.address))
"""


@pytest.fixture
def child(child_env: Any, run_child: Any, simulated: Any) -> Any:
    def run(code: str, **env: str) -> Any:
        return run_child(PRELUDE + code, child_env(devices=1, **env)).result

    return run


def test_arrays_on_cuda_export_the_cuda_array_interface(child: Any) -> None:
    result = child(
        """
a = offload.to_device(np.arange(12, dtype=np.float32).reshape(3, 4), device)
cai = a.__cuda_array_interface__
view = a[:, ::2] if hasattr(a, "__getitem__") else a.buffer.view(np.float32, (3, 2), (16, 8))
vcai = view.__cuda_array_interface__
host = offload.to_device(np.zeros(2), "host")
print(json.dumps({
    "cai": [list(cai["shape"]), cai["typestr"], cai["data"][0] == a.address, cai["data"][1], cai["version"],
            cai["strides"], cai["stream"]],
    "bytes": np.frombuffer(read_device(cai["data"][0], 48), np.float32).tolist(),
    "view": [list(vcai["shape"]), list(vcai["strides"]), vcai["data"][0] == view.address],
    "host_has_cai": hasattr(host, "__cuda_array_interface__"),
}))
"""
    )
    assert result["cai"] == [[3, 4], "<f4", True, False, 3, None, None]
    assert result["bytes"] == list(range(12))
    assert result["view"] == [[3, 2], [16, 8], True]
    assert result["host_has_cai"] is False


def test_foreign_memory_through_the_cuda_array_interface(child: Any) -> None:
    result = child(
        """
producer = Producer(np.arange(8, dtype=np.int32), stream=1)
a = offload.from_cuda_array_interface(producer)
b = offload.as_array(producer)
first = a.to_numpy().tolist()
a.copy_from(np.full(8, 7, dtype=np.int32))          # offload writes the other library's memory
after = np.frombuffer(read_device(producer.address, 32), np.int32).tolist()
b.buffer.fill(np.int32(9))                           # a fill of the other library's memory
filled = np.frombuffer(read_device(producer.address, 32), np.int32).tolist()
a.copy_from(np.full(8, 7, dtype=np.int32))
copy = offload.from_cuda_array_interface(producer, copy=True)
same = copy.address != producer.address and copy.to_numpy().tolist()
address = producer.address
del a, b, producer
gc.collect()
landing = offload.to_device(np.zeros(8, np.int32), "host")
try:                                                   # the registration ended with the imports
    offload.olMemcpy(None, landing.address, offload.devices("host")[0].handle, address, device.handle, 32)
    refused = None
except offload.OffloadError as error:
    refused = [error.code.name, error.details]
bad = []
for cai in ({"version": 3, "shape": (2,), "typestr": "<f4", "data": (address, False), "mask": object()},
            {"version": 9, "shape": (2,), "typestr": "<f4", "data": (address, False)},
            {"version": 3, "shape": (2,), "typestr": "<f4", "data": (address, False), "stream": 0}):
    try:
        offload.from_cuda_array_interface(cai)
    except offload.OffloadError as error:
        bad.append(error.code.name)
print(json.dumps({"first": first, "after": after, "filled": filled, "copy": same, "refused": refused, "bad": bad}))
"""
    )
    assert result["first"] == list(range(8))
    assert result["after"] == [7] * 8
    assert result["filled"] == [9] * 8
    assert result["copy"] == [7] * 8
    assert result["refused"][0] == "INVALID_ARGUMENT" and "not a live allocation" in result["refused"][1], result["refused"]
    assert result["bad"] == ["INVALID_ARGUMENT"] * 3


def test_foreign_memory_through_dlpack(child: Any) -> None:
    result = child(
        """
from offload.objects import _dlpack
producer = Producer(np.arange(6, dtype=np.float32))
capsule = _dlpack.export(producer, producer.address, (_dlpack.CUDA, 0), (6,), (1,), (_dlpack.FLOAT, 32), False)
a = offload.from_dlpack(capsule)
before = a.to_numpy().tolist()
a.copy_from(np.ones(6, np.float32))
print(json.dumps({"kind": a.kind.name, "before": before,
                  "after": np.frombuffer(read_device(producer.address, 24), np.float32).tolist()}))
"""
    )
    assert result == {"kind": "DEVICE", "before": [0, 1, 2, 3, 4, 5], "after": [1.0] * 6}


def test_dlpack_stream_orders_the_consumer_by_an_event(child: Any, kernels: Any) -> None:
    """With every stream operation delayed, the export returns before the producer's queue is
    done (the host did not wait), and the consumer's stream still reads the finished data."""
    result = child(
        f"""
n = 4096
x = offload.to_device(np.arange(n, dtype=np.float32), device)
y = offload.to_device(np.ones(n, dtype=np.float32), device)
program = device.load_program({str(kernels.image("saxpy", "cubin"))!r})
saxpy = program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n")
queue = device.queue()
queue.launch(saxpy, n // 256, 256, 2.0, x, y, n)
marker = queue.record()
consumer = ok(cu.cuStreamCreate(1))                    # CU_STREAM_NON_BLOCKING
started = time.perf_counter()
capsule = y.__dlpack__(stream=int(consumer))
returned_after = time.perf_counter() - started
producer_done = marker.is_complete
out = np.empty(n, np.float32)
ok(cu.cuMemcpyDtoHAsync(out.ctypes.data, y.address, out.nbytes, consumer))
ok(cu.cuStreamSynchronize(consumer))
errors = []
for bad in (0, -5, "s"):
    try:
        y.__dlpack__(stream=bad)
    except BufferError as error:
        errors.append(str(error)[:40])
queue.sync()
print(json.dumps({{"producer_done": producer_done, "correct": bool((out == 2 * np.arange(n) + 1).all()),
                  "errors": len(errors)}}))
""",
        kernels=kernels,
        GPUSIM_DELAY_US="150000",
    )
    assert result["producer_done"] is False  # __dlpack__ did not wait for the queue
    assert result["correct"] is True  # the consumer's stream waited for it
    assert result["errors"] == 3
