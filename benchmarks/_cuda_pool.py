"""bench_cuda's stream-ordered memory section: an allocate-use-free loop, one iteration being
allocate ``SIZE`` bytes on a stream, fill them (the use), free them on the stream, all enqueued
behind a held stream (as bench_cuda's launches and copies are) and synchronised per batch.

Sides: raw cuda.bindings (``cuMemAllocAsync`` / ``cuMemsetD8Async`` / ``cuMemFreeAsync`` on the
device's default pool), cuda.core's pooled allocation (``Device.allocate(size, stream=)``: its
``DeviceMemoryResource``, ``Buffer.fill(value, stream=)``, ``Buffer.close(stream)``), offload's
flat API (``olMemAllocAsync`` / ``olMemFill`` / ``olMemFreeAsync``) and its object layer
(``device.alloc(size, queue=q)``, ``buffer.fill(pattern, queue=q)``, ``buffer.close(q)``).
Target: the object layer's loop within 1.5x cuda.core's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import offload
from _cuda_held import Gate, Gated, held

__all__ = ["SIZE", "TARGET_POOLED", "pooled_ns"]

SIZE = 4096
TARGET_POOLED = 1.5

Side = tuple[Gated, Callable[[int], None]]  # (hold, release), loop(count)


def pooled_ns(driver: Any, gpu_handle: Any, gate: Gate, n: int, batch: int, repeats: int) -> dict[str, float]:
    """ns per iteration of each side's loop (``n`` iterations in held batches of at most ``batch``
    operations, each iteration enqueueing up to 3), interleaved; with each side's ratio to raw and
    the object layer's and the flat API's to cuda.core's."""
    from _measure import interleaved_samples, medians, paired_ratio

    sides, close = _sides(driver, gpu_handle, gate)
    per_batch = max(1, batch // 3)
    try:
        samples = interleaved_samples(
            {name: (lambda side=side: held(side[0], side[1], n, per_batch)) for name, side in sides.items()}, repeats, gc_off=True
        )
    finally:
        close()
    result = medians(samples)
    for name in samples:
        if name != "raw":
            result[f"{name}_ratio"] = paired_ratio(samples[name], samples["raw"])
    if "cuda.core" in samples:
        result["objects_vs_cuda_core"] = paired_ratio(samples["objects"], samples["cuda.core"])
        result["flat_vs_cuda_core"] = paired_ratio(samples["flat"], samples["cuda.core"])
    return result


def _sides(driver: Any, gpu_handle: Any, gate: Gate) -> tuple[dict[str, Side], Callable[[], None]]:
    """Each side's ((hold, release), loop) on device 0 (cuda.core's only where it imports), and
    the function that releases their streams and queues."""
    import numpy as np

    d = driver
    sides: dict[str, Side] = {}
    _, raw_stream = d.cuStreamCreate(1)

    def raw_loop(count: int) -> None:
        alloc, memset, free = d.cuMemAllocAsync, d.cuMemsetD8Async, d.cuMemFreeAsync
        for _ in range(count):
            _, address = alloc(SIZE, raw_stream)
            memset(address, 7, SIZE, raw_stream)
            free(address, raw_stream)

    sides["raw"] = (gate.stream(d, raw_stream), raw_loop)

    try:
        from cuda.core import Device
    except ImportError:
        pass
    else:
        core_device = Device(0)
        core_device.set_current()
        core_stream = core_device.create_stream()
        value = np.uint8(7)

        def core_loop(count: int) -> None:
            allocate = core_device.allocate
            for _ in range(count):
                buffer = allocate(SIZE, stream=core_stream)
                buffer.fill(value, stream=core_stream)
                buffer.close(core_stream)

        sides["cuda.core"] = (gate.stream(d, core_stream.handle, core_stream.sync), core_loop)

    queue = offload.olCreateQueue(gpu_handle)

    def flat_loop(count: int) -> None:
        alloc, fill, free, device = offload.olMemAllocAsync, offload.olMemFill, offload.olMemFreeAsync, offload.AllocType.DEVICE
        for _ in range(count):
            address = alloc(queue, device, SIZE)
            fill(queue, address, b"\x07", SIZE)
            free(queue, address)

    sides["flat"] = (gate.queue(queue), flat_loop)

    gpu = next(dev for dev in offload.devices("cuda") if dev.handle == gpu_handle)
    objects_queue = gpu.queue()

    def objects_loop(count: int) -> None:
        alloc = gpu.alloc
        for _ in range(count):
            buffer = alloc(SIZE, queue=objects_queue)
            buffer.fill(b"\x07", queue=objects_queue)
            buffer.close(objects_queue)

    sides["objects"] = (gate.objects_queue(objects_queue), objects_loop)

    def close() -> None:
        objects_queue.close()
        offload.olDestroyQueue(queue)
        if "cuda.core" in sides:
            core_stream.close()
        d.cuStreamDestroy(raw_stream)

    return sides, close
