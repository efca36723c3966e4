"""The object layer on any platform by name: a numpy round trip, and a saxpy launch when a
program image for that device is given. ``objects_cuda.py`` and ``objects_amdgpu.py`` call this.

    pip install '.[cuda]'         # or '.[amdgpu]': offload, its backend and numpy (from a checkout)
    python examples/objects_gpu.py PLATFORM [IMAGE]

IMAGE is a program holding ``saxpy(float a, const float *x, float *y, uint64_t n)`` built for the
device's own architecture, e.g. ``nvcc -cubin -arch=sm_XY -o saxpy.cubin examples/kernels/saxpy.cu``
with the GPU's compute capability XY for cuda (a cubin of another major, or a higher minor, is
refused), or ``clang -x hip --offload-arch=gfx90a --cuda-device-only -o saxpy.hsaco
examples/kernels/saxpy.hip`` with the GPU's gfx target for amdgpu. ``offload.build`` picks the
architecture itself: ``examples/build_everywhere.py`` builds a portable saxpy for every device.
A backend that reports kernel layouts needs no signature; one is declared anyway.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import offload

SAXPY_SIGNATURE = "float a, const float *x, float *y, uint64_t n"


def run(platform: str, image: str | None = None) -> int:
    try:
        found = offload.devices(platform)
    except offload.OffloadError as error:  # no such platform loaded (INVALID_ARGUMENT naming those there are)
        found = []
        print(error.details)
    if not found:
        print(f"no {platform} device: is the offload-{platform} backend installed? (offload backends)")
        return 0
    device = found[0]
    print(f"device: {device.name} ({device.id})")

    x = np.arange(1 << 16, dtype=np.float32)
    dx = offload.to_device(x, device)  # device memory
    assert np.array_equal(dx.to_numpy(), x)
    pinned = offload.to_device(x, device, offload.AllocType.HOST)  # host memory of the device
    print(f"DLPack devices: device memory {dx.__dlpack_device__()}, host memory {pinned.__dlpack_device__()}")
    if pinned.buffer.host_accessible:
        assert np.array_equal(np.from_dlpack(pinned), x)  # numpy views it without a copy

    if image is None:
        print("no program image given: the kernel launch is skipped")
        print("ok")
        return 0
    y = np.ones_like(x)
    with device.load_program(Path(image)) as program, device.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        dy = offload.to_device(y, device, queue=queue)
        queue.launch(saxpy, (x.size + 255) // 256, 256, np.float32(2.0), dx, dy, x.size)
        result = dy.to_numpy(queue=queue)
    np.testing.assert_allclose(result, 2.0 * x + 1.0)
    print("saxpy ok")
    print("ok")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
