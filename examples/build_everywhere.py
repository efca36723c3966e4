"""One kernel source, every device: ``offload.build`` compiles examples/kernels/saxpy_portable.c
(written with ``offload_kernel.h``) for each device offload finds, with that device's own
toolchain (the C compiler for the host, NVRTC or nvcc for CUDA, clang for AMDGPU), and runs it.

    python examples/build_everywhere.py            # every device
    python examples/build_everywhere.py cuda:0     # one device
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import offload
from offload import objects

SOURCE = (pathlib.Path(__file__).resolve().parent / "kernels" / "saxpy_portable.c").read_text()
N = 1 << 16
BLOCK = 256


def run(device: objects.Device) -> None:
    """Build saxpy for ``device``, run it over N elements, and check the result."""
    try:
        program = device.build_program(SOURCE)
    except offload.OffloadError as error:
        if error.code is not offload.ErrorCode.UNSUPPORTED:  # a compile failure is a failure
            raise
        print(f"{device.id} ({device.name}): skipped: {error.details}")  # a backend without a builder
        return
    x = offload.to_device(np.arange(N, dtype=np.float32), device)
    y = offload.to_device(np.ones(N, dtype=np.float32), device)
    with program, device.queue() as queue:
        saxpy = program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n")
        queue.launch(saxpy, (N + BLOCK - 1) // BLOCK, BLOCK, 2.0, x, y, N)
    expected = 2.0 * np.arange(N, dtype=np.float32) + 1.0
    if not np.array_equal(y.to_numpy(), expected):
        raise SystemExit(f"{device.id}: wrong result")
    print(f"{device.id} ({device.name}): saxpy over {N} elements built from source and correct")


def main(argv: list[str]) -> int:
    devices = [offload.objects.devices(a.split(":")[0])[int(a.partition(":")[2] or 0)] for a in argv] or offload.devices()
    for device in devices:
        run(device)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
