"""bench_cuda's peers beside raw cuda.bindings and the flat API: cuda.core and offload's object
layer, each enqueueing the same launch of ``foo`` and the same 8-byte pinned host-to-device copy
on its own stream / queue, held by the same host-function gate as the other two sides.

cuda.core (``cuda-core`` 1.2.2, optional: without it the section says why and is left out) runs
on the same device through the same primary context: ``launch(stream, LaunchConfig, kernel,
buffer)`` (``cuLaunchKernelEx``) with the kernel from ``ObjectCode.from_cubin``, and
``Buffer.copy_from(src, stream=...)`` between ``Buffer.from_handle`` views of the flat side's
memory. The object layer: ``queue.launch(kernel, 1, 1, out)`` (``foo`` declared ``uint32_t *out``) and
``target.copy_from(pinned, queue=queue)`` with ``offload.Buffer`` objects.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import offload
from _cuda_held import Gate

__all__ = ["Side", "cuda_core_side", "objects_side"]


@dataclass
class Side:
    """One peer's hold / release of its stream and its enqueue loops (``count`` operations)."""

    hold: Callable[[], None]
    release: Callable[[], None]
    launch: Callable[[int], None]
    copy: Callable[[int], None]
    close: Callable[[], None]


def cuda_core_side(driver: Any, image: bytes, out: int, target: int, source: int, gate: Gate) -> Side | str:
    """cuda.core on device 0, or why it cannot run."""
    try:
        from cuda.core import Buffer, Device, LaunchConfig, ObjectCode, launch
    except ImportError as exc:
        return f"cuda.core is not importable ({exc}); scripts/test.sh installs cuda-core==1.2.2"
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    kernel = ObjectCode.from_cubin(image).get_kernel("foo")
    config = LaunchConfig(grid=1, block=1)
    out_buffer = Buffer.from_handle(out, 256)
    dst, src = Buffer.from_handle(target, 8), Buffer.from_handle(source, 8)

    def launches(count: int) -> None:
        for _ in range(count):
            launch(stream, config, kernel, out_buffer)

    def copies(count: int) -> None:
        copy_from = dst.copy_from
        for _ in range(count):
            copy_from(src, stream=stream)

    return Side(*gate.stream(driver, stream.handle, stream.sync), launches, copies, stream.close)


def objects_side(image: bytes, gpu_handle: Any, gate: Gate, declared: bool = True) -> Side:
    """offload's object layer on the flat side's CUDA device; the kernel's signature declared (as a
    user does for typed arguments) or not (the launch packed by the sizes cuda reports and the
    classes of the arguments)."""
    device = next(d for d in offload.devices("cuda") if d.handle == gpu_handle)
    program = device.load_program(image)
    kernel = program.kernel("foo", "uint32_t *out") if declared else program.kernel("foo")
    queue = device.queue()
    out = offload.Buffer(256, device)
    target = offload.Buffer(8, device)
    pinned = offload.Buffer(8, device, kind=offload.AllocType.HOST)
    ctypes.memset(pinned.address, 0, 8)

    def launches(count: int) -> None:
        launch = queue.launch
        for _ in range(count):
            launch(kernel, 1, 1, out)

    def copies(count: int) -> None:
        copy_from = target.copy_from
        for _ in range(count):
            copy_from(pinned, queue=queue)

    def close() -> None:
        queue.close()
        for buffer in (out, target, pinned):
            buffer.close()
        program.close()

    return Side(*gate.objects_queue(queue), launches, copies, close)
