"""The object layer on the host device: a numpy round trip and a kernel launch, then the same
memory through the flat ol* API (both layers mix freely). Type-checks under ``mypy --strict``.

    pip install .                 # offload, the host backend and numpy (from a checkout)
    python examples/objects_host.py
"""

from __future__ import annotations

import numpy as np

import offload
import offload_host

SAXPY_SIGNATURE = "float a, const float *x, float *y, uint64_t n"  # as in kernels/saxpy.c


def main() -> None:
    device = offload.devices("host")[0]
    print(f"device: {device.name} ({device.id}, {device.num_compute_units} compute units)")

    # numpy in and out
    x = np.linspace(0.0, 1.0, 1_000_000, dtype=np.float32)
    dx = offload.to_device(x, device)
    assert np.array_equal(dx.to_numpy(), x)

    # a kernel launch: the kernel packs its own arguments from the declared signature
    y = np.ones_like(x)
    with device.load_program(offload_host.build_test_kernel("saxpy")) as program, device.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        dy = offload.to_device(y, device, queue=queue)
        start = queue.record()
        queue.launch(saxpy, (x.size + 255) // 256, 256, np.float32(2.0), dx, dy, x.size)
        end = queue.record()
        result = dy.to_numpy(queue=queue)
    # leaving the queue's block synchronised it
    np.testing.assert_allclose(result, 2.0 * x + 1.0)
    print(f"saxpy over {x.size} floats: {start.elapsed_time(end):.3f} ms")

    # host memory is shared with numpy without a copy (DLPack)
    view = np.from_dlpack(dy)
    view[:4] = 0.0
    assert dy.to_numpy()[:4].tolist() == [0.0] * 4

    # the flat API takes the same handles and addresses
    name: str = offload.olGetDeviceInfo(device.handle, offload.DeviceInfo.NAME)
    size: int = offload.olGetMemInfo(dy.address, offload.MemInfo.SIZE)
    scratch = offload.Buffer(16, device)
    offload.olMemcpy(None, scratch.address, device.handle, dy.address + 16, device.handle, 16)
    assert np.frombuffer(scratch.to_bytes(), np.float32).tolist() == result[4:8].tolist()
    print(f"flat API: {name!r}, an allocation of {size} bytes")
    print("ok")


if __name__ == "__main__":
    main()
