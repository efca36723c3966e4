"""``mpi_buffer`` on every backend present: it takes, as it is, every memory the documentation
calls host-readable (all of the host platform's; HOST and MANAGED of every device, whatever its
DLPack device type), and refuses only a GPU's DEVICE memory to an MPI that is not GPU-aware, naming
the ways out. (tests/amdgpu/test_amdgpu_objects.py runs the ``amdgpu`` cases on the simulated HIP
runtime, tests/cuda the ``cuda`` ones; the ``opencl`` ones run on PoCL where it is installed.)

mpi4py is not needed: ``mpi_buffer`` asks the MPI library only for DEVICE memory, and
``$OFFLOAD_MPI_GPU_AWARE=0`` answers for it here."""

from __future__ import annotations

import ctypes

import pytest

import offload
from offload.objects import mpi_buffer
from offload.objects._mpi import GPU_AWARE_ENV

A = offload.AllocType


@pytest.mark.parametrize("kind", [A.HOST, A.MANAGED, A.DEVICE])
def test_mpi_buffer_takes_every_host_readable_memory(
    device: offload.objects.Device, kind: offload.AllocType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(GPU_AWARE_ENV, "0")
    try:
        buffer = offload.Buffer(64, device, kind)
    except offload.OffloadError as error:  # a device without this kind of memory (OpenCL without fine-grained SVM)
        assert error.code is offload.ErrorCode.UNSUPPORTED, error
        pytest.skip(f"{device.id} has no {kind.name} memory: {error}")
    with buffer:
        buffer.copy_from(bytes(range(64)))
        on_host = device.platform.backend is offload.PlatformBackend.HOST
        if kind is A.DEVICE and not on_host:
            with pytest.raises(offload.OffloadError) as info:
                mpi_buffer(buffer)
            assert info.value.code is offload.ErrorCode.UNSUPPORTED
            assert "DEVICE memory" in info.value.details and "HOST or MANAGED memory" in info.value.details
            assert "host_staging" in info.value.details and GPU_AWARE_ENV in info.value.details
            return
        assert mpi_buffer(buffer) is buffer
        view = buffer.view("uint8", (64,))
        assert mpi_buffer(view) is view
        # what MPI then does: read the memory in place from the host
        assert ctypes.string_at(buffer.address, 64) == bytes(range(64))
