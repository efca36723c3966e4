"""Arrays and Buffers as MPI message buffers (mpi4py), without copies where MPI can read the memory.

mpi4py takes any object with ``__dlpack__`` / ``__dlpack_device__`` as a buffer, so an offload
``Array`` or ``Buffer`` passes to ``comm.Send``, ``comm.Allreduce`` ... as it is: host-accessible
memory (every host-platform allocation; HOST and MANAGED memory of every other device: CUDA,
AMDGPU and OpenCL alike, ``_memory.host_readable``) is read in place. DEVICE memory of a GPU is a
device pointer to MPI: only a GPU-aware MPI (CUDA-aware for cuda, ROCm-aware for amdgpu) can use
it; any other MPI would read it as host memory and crash. ``mpi_buffer(x)`` is the checked door:
it finishes the device's queued work (MPI is not stream-ordered), then returns ``x`` when MPI can
read its memory and otherwise raises ``OffloadError`` (UNSUPPORTED) naming the ways out:
``host_staging(x)``, which lends a host copy for the call and copies it back, or HOST or MANAGED
memory instead.

Whether the MPI is GPU-aware: ``$OFFLOAD_MPI_GPU_AWARE`` (``1``/``0``) if set, else the MPI
library's own answer (``MPIX_Query_cuda_support`` for cuda; ``MPIX_Query_rocm_support`` or
``MPIX_Query_hip_support`` for amdgpu; Open MPI and MPICH export them), read from the library that
an already imported ``mpi4py.MPI`` is linked to; else not GPU-aware.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from ._array import Array, _numpy
from ._arrayexport import sync_queues_of
from ._buffer import Buffer
from ._memory import host_readable

GPU_AWARE_ENV = "OFFLOAD_MPI_GPU_AWARE"
_QUERIES = {"cuda": ("MPIX_Query_cuda_support",), "amdgpu": ("MPIX_Query_rocm_support", "MPIX_Query_hip_support")}


def gpu_aware(platform: str) -> tuple[bool, str]:
    """Whether the MPI in use reads ``platform``'s device memory, and how that was found out."""
    setting = os.environ.get(GPU_AWARE_ENV, "").strip()
    if setting:
        return setting not in ("0", "false", "no"), f"${GPU_AWARE_ENV}={setting}"
    queries = _QUERIES.get(platform, ())
    mpi = sys.modules.get("mpi4py.MPI")
    if not queries:
        return False, f"no MPI is aware of {platform!r} device memory"
    if mpi is None:
        return False, "mpi4py.MPI is not imported, so the MPI cannot be asked"
    try:
        library = ctypes.CDLL(mpi.__file__)  # dlsym on it searches the libmpi it is linked to
    except (OSError, AttributeError, TypeError) as error:
        return False, f"cannot open mpi4py's library: {error}"
    for name in queries:
        query = getattr(library, name, None)
        if query is not None:
            query.restype = ctypes.c_int
            return bool(query()), f"{name}() of the MPI library"
    return False, f"the MPI library has no {' / '.join(queries)}"


def _view(obj: Array | Buffer) -> Array:
    if isinstance(obj, Buffer):
        return obj.view()
    if isinstance(obj, Array):
        return obj
    raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"expected an offload Array or Buffer, got {type(obj).__name__}")


def mpi_buffer(obj: Array | Buffer) -> Array | Buffer:
    """``obj``, ready to hand to mpi4py: its device's queued work done, its memory readable by MPI.

    Raises ``OffloadError`` (UNSUPPORTED) for DEVICE memory of a GPU when the MPI is not GPU-aware
    (see the module docstring), naming ``host_staging``, HOST or MANAGED memory, and
    ``$OFFLOAD_MPI_GPU_AWARE``.
    """
    view = _view(obj)
    sync_queues_of(view.device)
    if host_readable(view.device, view.buffer.kind):
        return obj
    platform = view.device.platform.name
    aware, why = gpu_aware(platform)
    if aware:
        return obj
    raise OffloadError(
        ErrorCode.UNSUPPORTED,
        f"{obj!r} is {platform} DEVICE memory and this MPI is not GPU-aware ({why}): stage it through host "
        f"memory (`with offload.objects.host_staging(x) as host: comm.Allreduce(..., host, ...)`), allocate "
        f"HOST or MANAGED memory (the host reads both in place), or set {GPU_AWARE_ENV}=1 for a GPU-aware MPI",
    )


@contextlib.contextmanager
def host_staging(obj: Array | Buffer, *, copy_back: bool = True) -> Iterator[Any]:
    """A numpy array holding ``obj``'s contents for an MPI call: the memory itself when the host
    can read it, else a host copy that is written back into ``obj`` when the block ends without an
    exception (``copy_back=False``: a send buffer, nothing to write back)."""
    view = _view(obj)
    sync_queues_of(view.device)
    if view.buffer.host_accessible:
        yield _numpy().from_dlpack(view)
        return
    host = view.to_numpy()
    yield host
    if copy_back:
        view.copy_from(host)
