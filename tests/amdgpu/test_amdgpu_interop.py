"""DLPack's ``stream=`` on the (simulated) HIP runtime: the consumer's raw hipStream_t waits for an
event recorded after the layer's queued saxpy (built from the portable source with offload.build),
and the host does not wait; a raw hipMalloc range imported through DLPack is copied by offload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_dlpack_stream_and_foreign_memory_on_amdgpu(hip_runtime: Path, clang: str, hip_child: Any, tmp_path: Path) -> None:
    code = f"""
import os, pathlib, sys
import numpy as np
import offload
from hip import hip
from offload.objects import _dlpack
sys.path.insert(0, {str(ROOT / "tests" / "simulators")!r})
import build_listener
build_listener.install(pathlib.Path(os.environ["GPUSIM_KERNELS"]), pathlib.Path({str(tmp_path / "work")!r}))
(device,) = offload.devices("amdgpu")
n = 4096
x = offload.to_device(np.arange(n, dtype=np.float32), device)
y = offload.to_device(np.ones(n, dtype=np.float32), device)
program = device.build_program(open({str(ROOT / "examples" / "kernels" / "saxpy_portable.c")!r}).read())
saxpy = program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n")
queue = device.queue()
queue.launch(saxpy, n // 256, 256, 2.0, x, y, n)
marker = queue.record()
err, consumer = hip.hipStreamCreate()
capsule = y.__dlpack__(stream=int(consumer))
producer_done = marker.is_complete
out = np.empty(n, np.float32)
hip.hipMemcpyDtoHAsync(out, y.address, out.nbytes, consumer)
hip.hipStreamSynchronize(consumer)
correct = bool((out == 2 * np.arange(n) + 1).all())
queue.sync()
err, raw = hip.hipMalloc(16)
hip.hipMemcpyHtoD(raw, np.arange(4, dtype=np.int32), 16)
imported = offload.from_dlpack(_dlpack.export(None, int(raw), (_dlpack.ROCM, 0), (4,), (1,), (_dlpack.INT, 32), False))
emit([producer_done, correct, imported.to_numpy().tolist()])
"""
    env = {
        "LD_LIBRARY_PATH": str(hip_runtime),
        "GPUSIM_KERNELS": str(tmp_path / "registry"),
        "GPUSIM_DELAY_US": "100000",
        "ROCM_PATH": str(tmp_path / "no-rocm"),
    }
    assert hip_child(code, env) == [False, True, [0, 1, 2, 3]]
