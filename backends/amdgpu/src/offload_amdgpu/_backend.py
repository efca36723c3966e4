"""The AMDGPU backend: the hookimpls of ``offload.hookspecs`` on hip-python (thin glue; the HIP
calls are made in ``_memory``, ``_queue``, ``_program`` and ``_launch``).

``queue is None`` (a synchronous operation) runs on the device's null stream, then waits for it.
With more than one device, calls that act on HIP's "current device" make it current first (a
module belongs to the device it was loaded on: HIP aborts on a mismatch).

From a host function (a thread HIP runs the function on, which must not call HIP): the releases
the core may ask there (``mem_free``, ``unload_binary``, the final teardown's hooks) are deferred
until the function has returned (``DriverHooks.run_or_defer``, ``offload.backend.support``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from offload import AllocType, DeviceInfo, KernelParam, MemMigrationFlag, SymbolKind, hookimpl
from offload.backend.native import NativeExtension, NativeHooks
from offload.backend.support import DriverHooks

from . import _build, _code_object, _cooperative, _device, _launch, _memory, _queue
from ._device import HipDevice
from ._driver import DriverUnavailable, check, load
from ._errors import FAULTABLE, raise_for
from ._program import HipImage, HipKernel
from ._queue import HipEvent, HipQueue, HostCalls

__all__ = ["AMDGPUBackend"]

log = logging.getLogger("offload_amdgpu")

_NO_DYNAMIC_LIMIT = (1 << 64) - 1


class AMDGPUBackend(DriverHooks, NativeHooks):
    """The AMDGPU platform: one device per HIP device of this process.

    Without a usable HIP runtime or device (no hip-python, no ``libamdhip64.so``, or HIP's own
    hipErrorNoDevice / hipErrorInvalidDevice) ``init`` returns no devices and keeps the reason in
    ``unavailable_reason`` (also ``reason``); it is None when devices were found. ``native`` holds
    the native entry points (``_native``, on rocm.bindings.cyhip's C API), or why there are none
    (``native.reason``, logged).
    """

    def __init__(self) -> None:
        self.hip: Any = None
        self.unavailable_reason: str | None = None
        self.devices: list[HipDevice] = []
        self.host_calls: HostCalls | None = None
        self.native: NativeExtension | None = None

    @property
    def reason(self) -> str | None:
        """``unavailable_reason`` under its earlier name."""
        return self.unavailable_reason

    # --- lifecycle (deinit, no_devices_reason: DriverHooks) ----------------------------------

    @hookimpl
    def init(self) -> list[HipDevice]:
        try:
            hip, count = load()
        except DriverUnavailable as exc:
            self.unavailable_reason = str(exc)
            log.info("offload-amdgpu: no devices: %s", self.unavailable_reason)
            return []
        self.hip = hip
        self.native = native = NativeExtension("offload_amdgpu._native")
        self.host_calls = HostCalls("offload-amdgpu", hip, native)
        self.devices = [HipDevice(hip, i, _device.read_target(hip, i), count > 1) for i in range(count)]
        for device in self.devices:
            device.native_record = native.device_record(0, device.ordinal, device.select)
            FAULTABLE[device.ordinal] = device  # (a sticky error while it is current reports it faulted)
        return list(self.devices)

    @hookimpl
    def deinit_device(self, device: HipDevice) -> None:
        FAULTABLE.pop(device.ordinal, None)
        self.run_or_defer(lambda: _queue.release_device(device))

    @hookimpl
    def get_device_info(self, device: HipDevice) -> Mapping[DeviceInfo, Any]:
        return _device.probe_info(device)

    # --- programs ------------------------------------------------------------------------------

    @hookimpl
    def build_target(self, device: HipDevice) -> str:
        return _build.build_target(device)

    @hookimpl
    def build_source(self, device: HipDevice, source: str, options: Sequence[str]) -> bytes:
        return _build.build_source(device, source, options)

    @hookimpl
    def is_valid_binary(self, device: HipDevice, data: bytes) -> bool:
        try:
            _code_object.code_object_for(data, device.target)
        except ValueError:
            return False
        return True

    @hookimpl
    def load_binary(self, device: HipDevice, data: bytes) -> HipImage:
        return HipImage(device, data)

    @hookimpl
    def unload_binary(self, device: HipDevice, image: HipImage) -> None:
        self.run_or_defer(lambda: image.unload(device))

    @hookimpl
    def get_kernel(self, device: HipDevice, image: HipImage, name: str) -> HipKernel:
        kernel = image.kernel(device, name)
        if self.native is not None:  # HIP has no opt-in limit of dynamic shared memory: it checks each launch
            kernel.native_record = self.native.kernel_record(kernel.function, kernel.param_bytes, _NO_DYNAMIC_LIMIT)
        return kernel

    @hookimpl
    def get_global(self, device: HipDevice, image: HipImage, name: str) -> tuple[int, int]:
        return image.global_variable(device, name)

    @hookimpl
    def kernel_params(self, device: HipDevice, kernel: HipKernel) -> Sequence[KernelParam]:
        return kernel.info.params

    @hookimpl
    def max_group_size(self, device: HipDevice, kernel: HipKernel, dynamic_memory: int) -> int:
        hip = device.hip
        device.activate()  # HIP computes occupancy for the current device
        result = hip.hipModuleOccupancyMaxPotentialBlockSize(kernel.function, dynamic_memory, 0)
        if result[0]:
            raise_for(hip, result[0], "hipModuleOccupancyMaxPotentialBlockSize")
        return int(result[2])

    launch_kernel = staticmethod(hookimpl(_launch.launch_kernel))  # the hot path, without a glue frame
    launch_kernel_cooperative = staticmethod(hookimpl(_cooperative.launch_cooperative))
    max_cooperative_groups = staticmethod(hookimpl(_cooperative.max_cooperative_groups))

    @hookimpl
    def mem_prefetch(self, device: HipDevice, queue: HipQueue, address: int, size: int, flags: MemMigrationFlag) -> None:
        """``hipMemPrefetchAsync`` of managed memory to the device, or to the host
        (``hipCpuDeviceId``, -1) for DEVICE_TO_HOST alone."""
        hip = device.hip
        device.activate()
        target = -1 if flags == MemMigrationFlag.DEVICE_TO_HOST else device.ordinal
        check(hip, hip.hipMemPrefetchAsync(address, size, target, queue.stream), "hipMemPrefetchAsync")

    @hookimpl
    def symbol_names(self, device: HipDevice, image: HipImage, kind: SymbolKind) -> list[str]:
        """From the code object: its kernels' metadata, or its exported data symbols (less the
        ``__hip_cuid_*`` compilation-unit ids clang adds, which HIP's module does not resolve)."""
        if kind is SymbolKind.KERNEL:
            return list(image.code.kernels)
        return [name for name in image.code.globals if not name.startswith("__hip_cuid_")]

    # --- memory --------------------------------------------------------------------------------

    @hookimpl
    def mem_alloc(self, device: HipDevice, alloc_type: AllocType, size: int) -> int:
        return _memory.alloc(device, alloc_type, size)

    @hookimpl
    def mem_free(self, device: HipDevice, address: int, alloc_type: AllocType) -> None:
        self.run_or_defer(lambda: _memory.free(device, address, alloc_type))

    @hookimpl
    def mem_alloc_async(self, device: HipDevice, queue: HipQueue, alloc_type: AllocType, size: int) -> int:
        return _memory.alloc_async(device, queue.stream, size)

    @hookimpl
    def mem_free_async(self, device: HipDevice, queue: HipQueue, address: int) -> None:
        self.run_or_defer(lambda: _memory.free_async(device, queue.stream, address))

    @hookimpl
    def mem_register(self, device: HipDevice, address: int, size: int, lock: bool) -> int:
        """HIP's device pointer of the registered range (the core counts nested registrations
        and refuses partial overlaps)."""
        return _memory.register(device, address, size)

    @hookimpl
    def mem_unregister(self, device: HipDevice, address: int) -> None:
        _memory.unregister(device, address)

    data_submit = staticmethod(hookimpl(_memory.data_submit))  # hot paths, without a glue frame
    data_retrieve = staticmethod(hookimpl(_memory.data_retrieve))

    @hookimpl
    def data_exchange(
        self, src_device: HipDevice, src: int, dst_device: HipDevice, dst: int, size: int, queue: HipQueue | None
    ) -> None:
        _memory.copy_between(src_device, src, dst_device, dst, size, None if queue is None else queue.stream)

    @hookimpl
    def data_copy_rect(
        self, device: HipDevice, dst: int, dst_pitches: tuple[int, int], src: int, src_pitches: tuple[int, int],
        extent: tuple[int, int, int], queue: HipQueue | None,
    ) -> None:
        _memory.copy_rect(device, dst, dst_pitches, src, src_pitches, extent, None if queue is None else queue.stream)

    @hookimpl
    def data_fill(self, device: HipDevice, address: int, pattern: bytes, size: int, queue: HipQueue | None) -> None:
        _memory.fill(device, address, pattern, size, None if queue is None else queue.stream)

    # --- queues and events (synchronize, has_pending_work, enqueue_host_call: DriverHooks) -------

    queue_busy = staticmethod(_queue.stream_busy)

    def wait_queue(self, queue: HipQueue) -> None:
        """HIP's wait for the queue's stream, polling while host functions are queued (``HostCalls.wait``)."""
        assert self.host_calls is not None
        self.host_calls.wait(queue)

    @hookimpl
    def create_queue(self, device: HipDevice) -> HipQueue:
        return self.with_queue_record(_queue.create_queue(device))

    @hookimpl
    def adopt_stream(self, device: HipDevice, stream: int) -> HipQueue:
        return self.with_queue_record(_queue.adopt(device, stream))

    @hookimpl
    def queue_stream(self, device: HipDevice, queue: HipQueue) -> int:
        return int(queue.stream)

    @hookimpl
    def create_event(self, device: HipDevice, queue: HipQueue) -> HipEvent:
        return _queue.create_event(device, queue)

    @hookimpl
    def destroy_event(self, device: HipDevice, event: HipEvent) -> None:
        _queue.destroy_event(device, event)

    @hookimpl
    def wait_event(self, device: HipDevice, queue: HipQueue, event: HipEvent) -> None:
        _queue.wait_event(device, queue, event)

    @hookimpl
    def foreign_stream_wait(self, device: HipDevice, stream: int, event: HipEvent) -> None:
        _queue.foreign_stream_wait(device, stream, event)

    @hookimpl
    def foreign_stream_sync(self, device: HipDevice, stream: int) -> None:
        _queue.foreign_stream_sync(device, stream)

    @hookimpl
    def is_event_complete(self, device: HipDevice, event: HipEvent) -> bool:
        return _queue.is_event_complete(device, event)

    @hookimpl
    def sync_event(self, device: HipDevice, event: HipEvent) -> None:
        assert self.host_calls is not None
        _queue.sync_event(self.host_calls, device, event)

    @hookimpl
    def event_elapsed_time(self, device: HipDevice, start: HipEvent, end: HipEvent) -> float:
        return _queue.event_elapsed_time(device, start, end)
