"""Streams shared with HIP code both ways on the simulated runtime (issue 32, part 1): raw
hip-python work enqueued on an offload Queue's stream (``Queue.raw_stream``; HIP has no stream
protocol such as cuda.core's ``__cuda_stream__``, which a HIP queue refuses), and offload work on a
raw ``hipStream_t`` (``Queue.from_stream``). As for CUDA (tests/cuda/test_cuda_streams.py), each
side's work waits behind a gate, and the data shows the enqueued order."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_hip_work_on_offload_queues_and_offload_work_on_hip_streams(hip_runtime: Path, hip_child: Any, tmp_path: Path) -> None:
    code = """
import ctypes, threading
import numpy as np
import offload
from offload.objects import Queue
from hip import hip
(device,) = offload.devices("amdgpu")
n = 1024
out = {}
y = device.alloc(n * 4)
pinned = device.alloc(n * 4, "host")
back = np.frombuffer((ctypes.c_float * n).from_address(pinned.address), dtype=np.float32)
back[:] = -1.0
ONE, TWO = 0x3F800000, 0x40000000

# HIP work on an offload queue's stream
q = device.queue()
out["cuda_protocol"] = None
try:
    q.__cuda_stream__()
except offload.OffloadError as exc:
    out["cuda_protocol"] = exc.code.name
gate = threading.Event()
q.host_function(gate.wait, 60)
y.fill(b"\\0\\0\\0\\0", queue=q)                                              # offload: y = 0
status = hip.hipMemsetD32Async(y.address, ONE, n, hip.hipStream_t.fromObj(q.raw_stream))[0]   # HIP: y = 1
q.copy(pinned, y)                                                            # offload: back = y
out["hip_waited"] = [int(status), bool((back == -1.0).all())]
gate.set()
q.sync()
out["hip_on_offload"] = bool((back == 1.0).all())

# offload work on a raw HIP stream
err, s = hip.hipStreamCreate()
q2 = Queue.from_stream(int(s), device)
out["adopted_same"] = q2.raw_stream == int(s)
back[:] = -1.0
gate2 = threading.Event()
q3 = device.queue()
q3.host_function(gate2.wait, 60)
offload.foreign_stream_wait(int(s), q3.record())                            # the HIP stream waits for q3
status = hip.hipMemsetD32Async(y.address, TWO, n, s)[0]                     # HIP: y = 2
q2.copy(pinned, y)                                                           # offload: back = y
out["offload_waited"] = [int(status), bool((back == -1.0).all())]
gate2.set()
hip.hipStreamSynchronize(s)                                                  # the owner's sync covers offload's copy
out["offload_on_hip"] = bool((back == 2.0).all())
q2.close()
out["stream_alive"] = int(hip.hipStreamQuery(s)[0])
try:
    Queue.from_stream(0, device)
except offload.OffloadError as exc:
    out["null_stream"] = exc.code.name
hip.hipStreamDestroy(s)
q.close(); q3.close(); y.close(); pinned.close()
emit(out)
"""
    env = {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_KERNELS": str(tmp_path / "registry"), "ROCM_PATH": str(tmp_path / "no-rocm")}
    assert hip_child(code, env) == {
        "cuda_protocol": "UNSUPPORTED",
        "hip_waited": [0, True],
        "hip_on_offload": True,
        "adopted_same": True,
        "offload_waited": [0, True],
        "offload_on_hip": True,
        "stream_alive": 0,
        "null_stream": "INVALID_ARGUMENT",
    }
