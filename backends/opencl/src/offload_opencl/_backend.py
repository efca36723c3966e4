"""The OpenCL backend: the hookimpls of ``offload.hookspecs`` on PyOpenCL (glue only; the driver
calls are made in ``_device``, ``_memory``, ``_queue`` and ``_program``). ``init`` and the device and
platform info go through the ICD loader only (``_icd``, ``_info``): PyOpenCL is imported by the first
hook that needs a driver object (``_cl``).

``queue is None`` (a synchronous operation) runs on the device's ``sync_queue`` and waits for its
event. From a host function the releases the core may ask (``mem_free``, ``unload_binary``, the
final teardown's hooks) are deferred until the function has returned (``DriverHooks.run_or_defer``,
``offload.backend.support``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from offload import AllocType, DeviceInfo, ErrorCode, KernelLaunchSizeArgs, KernelParam, OffloadError, PlatformInfo, SymbolKind, hookimpl
from offload.backend.support import DriverHooks, ResourcePool

from . import _cl as cl
from . import _memory, _queue
from ._device import OpenCLDevice, discover
from ._errors import driver
from ._program import OpenCLImage, OpenCLKernel, image_problem
from ._queue import OpenCLEvent, OpenCLHostFunctions, OpenCLQueue

__all__ = ["OpenCLBackend"]


class _DeviceState:
    """A device and its pooled command queues."""

    def __init__(self, device: OpenCLDevice) -> None:
        self.device = device
        self.queues: ResourcePool[cl.CommandQueue] = ResourcePool(
            lambda: _queue.make_queue(device), lambda q: q.finish(), f"command queues of {device!r}"
        )

    def release(self) -> None:
        """Destroy the pooled command queues, then wait for the device's synchronous one."""
        try:
            self.queues.destroy()
        finally:
            self.device.finish()

    def recycle(self, queue: OpenCLQueue) -> None:
        try:
            _queue.wait(queue)
        finally:
            self.queues.release(queue.cl_queue)


class OpenCLBackend(DriverHooks):
    """Every OpenCL device with shared virtual memory, on one offload platform ``opencl``."""

    def __init__(self) -> None:
        self.devices: list[_DeviceState] = []
        self.skipped: list[str] = []
        self.host_calls = OpenCLHostFunctions("offload-opencl")

    @staticmethod
    def _enqueued(queue: OpenCLQueue | None, device: OpenCLDevice, event: cl.Event) -> None:
        if queue is None:
            with driver("clWaitForEvents"):
                event.wait()
        else:
            queue.track(event)

    # --- lifecycle (deinit, deinit_device: DriverHooks) --------------------------------------

    @hookimpl
    def init(self) -> list[_DeviceState]:
        if not cl.installed():  # (a broken install: every driver object is made through PyOpenCL)
            self.devices, self.skipped = [], [f"PyOpenCL is not importable, and offload-opencl makes every driver object through it ({cl.INSTALL})"]
            return []
        devices, self.skipped = discover()
        self.devices = [_DeviceState(device) for device in devices]
        return list(self.devices)

    @hookimpl
    def no_devices_reason(self) -> str | None:  # (what discovery left out, not unavailable_reason)
        return "; ".join(self.skipped) or (None if self.devices else "no OpenCL device")

    @hookimpl
    def platform_info(self) -> Mapping[PlatformInfo, str]:
        platforms = list(dict.fromkeys(state.device.platform for state in self.devices))  # read at discovery
        return {
            PlatformInfo.VENDOR_NAME: "; ".join(p.vendor.strip() for p in platforms),
            PlatformInfo.VERSION: "; ".join(p.version.strip() for p in platforms),
        }

    @hookimpl
    def get_device_info(self, device: _DeviceState) -> Mapping[DeviceInfo, Any]:
        return device.device.info()

    # --- programs ------------------------------------------------------------------------------

    @hookimpl
    def is_valid_binary(self, device: _DeviceState, data: bytes) -> bool:
        return image_problem(device.device, data) is None

    @hookimpl
    def load_binary(self, device: _DeviceState, data: bytes) -> OpenCLImage:
        return OpenCLImage(device.device, data)

    @hookimpl
    def unload_binary(self, device: _DeviceState, image: OpenCLImage) -> None:
        image.kernels.clear()  # PyOpenCL releases the cl_program and cl_kernels with the objects

    @hookimpl
    def get_kernel(self, device: _DeviceState, image: OpenCLImage, name: str) -> OpenCLKernel:
        return image.kernel(device.device, name)

    @hookimpl
    def symbol_names(self, device: _DeviceState, image: OpenCLImage, kind: SymbolKind) -> list[str]:
        if kind is SymbolKind.KERNEL:
            return [name for name in image.program.kernel_names.split(";") if name]
        raise OffloadError(
            ErrorCode.UNSUPPORTED,
            f"{device.device!r}: OpenCL gives no address of a program's global variables, so it has none to list "
            "(olIterateSymbols lists kernels only)",
        )

    @hookimpl
    def kernel_params(self, device: _DeviceState, kernel: OpenCLKernel) -> Sequence[KernelParam]:
        return kernel.params

    @hookimpl
    def max_group_size(self, device: _DeviceState, kernel: OpenCLKernel, dynamic_memory: int) -> int:
        if kernel.local_mem + dynamic_memory > int(device.device.device.local_mem_size):
            raise OffloadError(ErrorCode.OUT_OF_RESOURCES, f"kernel {kernel.name} cannot run with {dynamic_memory} bytes of local memory")
        return kernel.work_group_size

    @hookimpl
    def launch_kernel(
        self, device: _DeviceState, queue: OpenCLQueue | None, kernel: OpenCLKernel, args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        dims = launch.dimensions
        local = tuple(launch.group_size)[:dims]
        grid = tuple(g * s for g, s in zip(tuple(launch.num_groups)[:dims], local))
        cl_queue = device.device.sync_queue if queue is None else queue.cl_queue
        with kernel.lock, driver(f"clEnqueueNDRangeKernel of {kernel.name}"):
            kernel.set_args(args, launch.dyn_shared_memory)
            event = cl.enqueue_nd_range_kernel(cl_queue, kernel.kernel, grid, local)
        self._enqueued(queue, device.device, event)

    # --- memory --------------------------------------------------------------------------------

    @hookimpl
    def mem_alloc(self, device: _DeviceState, alloc_type: AllocType, size: int) -> int:
        return _memory.alloc(device.device, alloc_type, size)

    @hookimpl
    def mem_free(self, device: _DeviceState, address: int) -> None:
        self.run_or_defer(lambda: _memory.free(device.device, address))

    def _copy(self, device: OpenCLDevice, dst: int, src: int, size: int, queue: OpenCLQueue | None) -> None:
        if queue is None:
            _memory.copy(device.sync_queue, dst, src, size, blocking=True)
        else:
            queue.track(_memory.copy(queue.cl_queue, dst, src, size, blocking=False))

    @hookimpl
    def data_submit(self, device: _DeviceState, dst: int, src: int, size: int, queue: OpenCLQueue | None) -> None:
        self._copy(device.device, dst, src, size, queue)

    @hookimpl
    def data_retrieve(self, device: _DeviceState, dst: int, src: int, size: int, queue: OpenCLQueue | None) -> None:
        self._copy(device.device, dst, src, size, queue)

    @hookimpl
    def data_exchange(
        self, src_device: _DeviceState, src: int, dst_device: _DeviceState, dst: int, size: int, queue: OpenCLQueue | None
    ) -> None:
        if queue is None and src_device.device.context is not dst_device.device.context:
            raise OffloadError(ErrorCode.UNSUPPORTED, "a copy between devices of two OpenCL platforms")
        self._copy(src_device.device if queue is None else queue.device, dst, src, size, queue)

    @hookimpl
    def data_fill(self, device: _DeviceState, address: int, pattern: bytes, size: int, queue: OpenCLQueue | None) -> None:
        keep: list[Any] = []
        cl_queue = device.device.sync_queue if queue is None else queue.cl_queue
        event = _memory.fill(cl_queue, address, pattern, size, keep)
        if keep:  # the expanded pattern lives until the copy is done
            event.set_callback(cl.command_execution_status.COMPLETE, lambda status: keep.clear())
        self._enqueued(queue, device.device, event)

    # --- queues and events (synchronize, has_pending_work, enqueue_host_call: DriverHooks) -------

    wait_queue = staticmethod(_queue.wait)
    queue_busy = staticmethod(_queue.queue_busy)

    @hookimpl
    def create_queue(self, device: _DeviceState) -> OpenCLQueue:
        return OpenCLQueue(device.device, device.queues.acquire())

    @hookimpl
    def create_event(self, device: _DeviceState, queue: OpenCLQueue) -> OpenCLEvent:
        with driver("clEnqueueMarkerWithWaitList"):
            marker = cl.enqueue_marker(queue.cl_queue)
        return OpenCLEvent(marker, queue)

    @hookimpl
    def wait_event(self, device: _DeviceState, queue: OpenCLQueue, event: OpenCLEvent) -> None:
        if event.queue.device.context is not queue.device.context:
            raise OffloadError(ErrorCode.UNSUPPORTED, "waiting for an event of another OpenCL platform")
        with driver("clEnqueueBarrierWithWaitList"):
            queue.track(cl.enqueue_barrier(queue.cl_queue, wait_for=[event.marker]))

    @hookimpl
    def is_event_complete(self, device: _DeviceState, event: OpenCLEvent) -> bool:
        return bool(event.marker.command_execution_status <= cl.command_execution_status.COMPLETE)

    @hookimpl
    def sync_event(self, device: _DeviceState, event: OpenCLEvent) -> None:
        _queue.sync_event(event)

    @hookimpl
    def event_elapsed_time(self, device: _DeviceState, start: OpenCLEvent, end: OpenCLEvent) -> float:
        return _queue.elapsed_ms(start, end)
