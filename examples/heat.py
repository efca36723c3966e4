"""The heat equation on a 2-D grid, the way a numpy user writes it: ``offload.zeros`` for the
grid, slicing to set the hot square and read a row back, and a 2-D launch of one portable kernel
(``offload_kernel.h``, built by ``offload.build`` for the device) per time step. The result is
checked against the same steps in numpy.

    python examples/heat.py            # the default device (offload.default_device())
    python examples/heat.py cuda:0     # one device by id

A 2-D launch: ``grid`` and ``block`` are Extents, an int or 1-3 ints in the order x, y, z;
``grid`` counts groups (blocks), ``block`` work-items per group, as CUDA's gridDim and blockDim.
In the kernel, ``offload_global_id(0)`` is the x index (group x times block x, plus the item's
x), ``offload_global_id(1)`` the y index. x goes along a row here (the fastest-varying, last
numpy axis), y down the rows, so element ``[j, i]`` of a (ny, nx) array is ``u[j * nx + i]``.
"""

from __future__ import annotations

import sys

import numpy as np

import offload

SOURCE = r"""
#include <offload_kernel.h>

/* One explicit step of du/dt = laplacian(u) on the inner points; the edges stay where they are. */
OFFLOAD_PORTABLE_KERNEL(heat_step, (const float *, u), (float *, out), (uint64_t, nx), (uint64_t, ny), (float, alpha)) {
  const uint64_t i = offload_global_id(0); /* x: the column */
  const uint64_t j = offload_global_id(1); /* y: the row */
  if (i >= 1 && j >= 1 && i + 1 < nx && j + 1 < ny) {
    const uint64_t c = j * nx + i;
    out[c] = u[c] + alpha * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] - 4.0f * u[c]);
  }
}
"""
NY, NX = 48, 64  # rows, columns
STEPS = 40
ALPHA = 0.2  # below 1/4: the explicit scheme is stable
BLOCK = (16, 8)  # x, y: work-items per group


def reference(u: np.ndarray) -> np.ndarray:
    """The same steps in numpy."""
    u = u.copy()
    for _ in range(STEPS):
        v = u.copy()
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + np.float32(ALPHA) * (
            u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - np.float32(4.0) * u[1:-1, 1:-1]
        )
        u = v
    return u


def main(device_id: str | None = None) -> None:
    if device_id is None:
        device = offload.default_device()
    else:
        platform, _, index = device_id.partition(":")
        device = offload.devices(platform)[int(index or 0)]
    print(f"device: {device.name} ({device.id})")
    with device:  # the default device of the object layer inside this block
        u = offload.zeros((NY, NX), np.float32)  # edges held at 0
        u[NY // 4 : 3 * NY // 4, NX // 4 : 3 * NX // 4] = 100.0  # a hot square: a strided view, filled
        start = u.to_numpy()
        v = u.copy()  # the edges of the second grid too
        grid = ((NX + BLOCK[0] - 1) // BLOCK[0], (NY + BLOCK[1] - 1) // BLOCK[1])  # groups along x, y
        with device.build_program(SOURCE) as program, device.queue() as queue:
            step = program.kernel("heat_step", "const float *u, float *out, uint64_t nx, uint64_t ny, float alpha")
            begin = queue.record()
            for _ in range(STEPS):
                queue.launch(step, grid, BLOCK, u, v, NX, NY, ALPHA)
                u, v = v, u
            end = queue.record()
        middle = u[NY // 2].to_numpy()  # one row: a view copied back alone
        result = u.to_numpy()
    expected = reference(start)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(middle, expected[NY // 2], rtol=1e-5, atol=1e-4)
    print(f"{STEPS} steps of a {NY}x{NX} grid in {end - begin:.3f} ms; heat {result.sum():.1f} of {start.sum():.1f}")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
