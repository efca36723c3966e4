"""A distributed saxpy with mpi4py: one process (rank) per device, offload Arrays as MPI buffers.

Each rank takes its share of ``y = a*x + y`` over N floats on its own device
(``offload.default_device()`` picks it from the launcher's local rank), then the ranks gather the
whole ``y`` (``Allgather`` straight from and into offload Arrays) and sum it (``Allreduce``); every
rank checks both against the closed form. Rank 0 prints one JSON line with the figures.

    mpirun -n 4 python examples/mpi_saxpy.py                     # (add --oversubscribe beyond the cores)
    OFFLOAD_TRACE='perfetto:rank{rank}.json' mpirun -n 4 python examples/mpi_saxpy.py
    offload trace merge rank*.json -o job.json && offload trace job.json

The kernel: the host platform's saxpy (built here); on a GPU give ``--image`` a saxpy image built
from examples/kernels/ (nvcc or hipcc). ``--stagger S`` makes rank r start S*r seconds late, to
show that the merged timeline lines the ranks up at the barrier anyway.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

import offload
from offload.objects import host_staging, mpi_buffer

SAXPY_SIGNATURE = "float a, const float *x, float *y, uint64_t n"  # as in examples/kernels/saxpy.cu
A = np.float32(2.5)
BLOCK = 256


def saxpy_image(device: offload.objects.Device, path: str | None) -> bytes:
    if path is not None:
        with open(path, "rb") as f:
            return f.read()
    if not device.is_host:
        raise SystemExit(f"{device.id}: give --image a saxpy image built for it from examples/kernels/")
    import offload_host

    return offload_host.build_test_kernel("saxpy")


def exchange(call: Callable[[Any, Any], None], send: offload.Array, recv: offload.Array) -> None:
    """``call(send, recv)`` on the Arrays themselves where MPI can read their memory (host memory;
    device memory with a GPU-aware MPI), else through host copies (``host_staging``)."""
    try:
        call(mpi_buffer(send), mpi_buffer(recv))
    except offload.OffloadError as error:
        if error.code is not offload.ErrorCode.UNSUPPORTED:
            raise
        with host_staging(send, copy_back=False) as host_send, host_staging(recv) as host_recv:
            call(host_send, host_recv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 16, help="floats per rank (default 2**16; the check is exact below 2**21 in all)")
    parser.add_argument("--image", help="a saxpy program image for a GPU device")
    parser.add_argument("--stagger", type=float, default=0.0, help="rank r sleeps STAGGER*r seconds first")
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    time.sleep(args.stagger * rank)
    device = offload.default_device()
    n, total = args.n, args.n * size

    # this rank's share: x = its global indices, y = 1
    x = offload.to_device(np.arange(rank * n, (rank + 1) * n, dtype=np.float32), device)
    y = offload.to_device(np.ones(n, dtype=np.float32), device)
    with device.load_program(saxpy_image(device, args.image)) as program, device.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        comm.Barrier()  # the ranks start their work together (a landmark in the merged timeline)
        started = time.perf_counter()
        queue.launch(saxpy, (n + BLOCK - 1) // BLOCK, BLOCK, A, x, y, n)
    # leaving the queue's block synchronised it
    whole = offload.empty(total, "float32", device)
    exchange(comm.Allgather, y, whole)
    partial = offload.to_device(np.array([y.to_numpy().astype(np.float64).sum()]), device)
    summed = offload.empty(1, "float64", device)
    exchange(comm.Allreduce, partial, summed)
    elapsed = time.perf_counter() - started

    expected = A * np.arange(total, dtype=np.float32) + np.float32(1)
    got = whole.to_numpy()
    if not np.array_equal(got, expected):
        bad = int(np.flatnonzero(got != expected)[0])
        raise SystemExit(f"rank {rank}: y[{bad}] = {got[bad]}, expected {expected[bad]}")
    closed_form = float(A) * total * (total - 1) / 2 + total
    if abs(float(summed.to_numpy()[0]) - closed_form) > 1e-9 * closed_form:
        raise SystemExit(f"rank {rank}: sum {summed.to_numpy()[0]}, expected {closed_form}")
    devices = comm.gather(device.id, root=0)
    if rank == 0:
        print(json.dumps({"ranks": size, "floats": total, "sum": float(summed.to_numpy()[0]), "devices": devices, "seconds": round(elapsed, 6)}))


if __name__ == "__main__":
    main()
