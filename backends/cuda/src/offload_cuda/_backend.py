"""The CUDA backend: the hookimpls of ``offload.hookspecs`` on cuda.bindings' driver API (thin
glue; the driver calls are made in ``_memory``, ``_queue``, ``_program`` and ``_launch``).

``queue is None`` (a synchronous operation) runs on the legacy default stream, then waits for it.
From a host function (a thread the driver runs the function on, which must not call CUDA): the
releases the core may ask there (``mem_free``, ``unload_binary``, the final teardown's hooks) are
deferred until the function has returned (``DriverHooks.run_or_defer``, ``offload.backend.support``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from offload.backend.support import DriverHooks, ResourcePool
from offload.backend.native import NativeExtension, NativeHooks

from offload import (
    AllocType,
    DeviceInfo,
    ErrorCode,
    KernelLaunchSizeArgs,
    KernelParam,
    MemMigrationFlag,
    OffloadError,
    SymbolKind,
    hookimpl,
)

from . import _binary, _build, _launch, _memory, _occupancy, _queue
from ._device import CudaDevice
from ._driver import DriverTooOld, DriverUnavailable, check, load
from ._errors import FAULTABLE
from ._pool import StreamOrderedPool
from ._program import CudaImage, CudaKernel
from ._queue import CudaEvent, CudaQueue, HostCalls

__all__ = ["CudaBackend"]

_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20
_COMPUTE_MODES = {2: "PROHIBITED", 3: "EXCLUSIVE_PROCESS"}
log = logging.getLogger("offload_cuda")


def _compute_mode_note(driver: Any, ordinal: int) -> str:
    """Why a GPU may refuse its context, where its compute mode says so (else empty)."""
    result, mode = driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE), ordinal
    )
    name = _COMPUTE_MODES.get(int(mode)) if not int(result) else None
    return f" (its compute mode is {name}: see nvidia-smi --compute-mode)" if name else ""


class _DeviceState:
    """A device and its pools (``recycle(queue)``: its stream back to the pool; ``pool``: the
    stream-ordered memory pool), and its record for the native entry points (``native_record``:
    None without them)."""

    __slots__ = ("device", "streams", "events", "recycle", "native_record", "pool")

    def __init__(self, device: CudaDevice, native: NativeExtension) -> None:
        self.device = device
        self.native_record = native.device_record(device.context_address, device.ordinal, False)
        self.streams: ResourcePool[Any] = _queue.stream_pool(device)
        self.events: ResourcePool[Any] = _queue.event_pool(device)
        self.pool = StreamOrderedPool(device)  # mem_alloc_async's (made on first use)
        self.recycle: Callable[[CudaQueue], None] = lambda queue: None if queue.adopted else self.streams.release(queue.stream)
        FAULTABLE[device.context_address] = self  # (a sticky error in its context reports it faulted)

    def release(self) -> None:
        """Destroy the pooled streams and every event still alive (the core does not destroy
        events at shutdown), then release the primary context, whatever failed before it."""
        try:
            self.device.activate()
            try:
                self.streams.destroy()
            finally:
                try:
                    self.events.destroy()
                finally:
                    self.pool.release()
        finally:
            FAULTABLE.pop(self.device.context_address, None)
            self.device.release()


class CudaBackend(DriverHooks, NativeHooks):
    """One CUDA platform: a device per GPU, each on its primary context.

    Without a driver (or with one that has no device) ``init`` returns no devices and keeps the
    reason in ``unavailable_reason``. ``native`` holds the native entry points (``_native``, on
    cuda.bindings.cydriver's C API), or why there are none (``native.reason``, logged).
    """

    def __init__(self) -> None:
        self.driver: Any = None
        self.devices: list[_DeviceState] = []
        self.unavailable_reason: str | None = None
        self.host_calls: HostCalls | None = None
        self.native: NativeExtension | None = None

    # --- lifecycle (deinit, deinit_device, no_devices_reason: DriverHooks) -------------------

    @hookimpl
    def init(self) -> list[_DeviceState]:
        try:
            self.driver, count = load()
        except DriverUnavailable as exc:
            self.unavailable_reason = str(exc)
            return []
        except DriverTooOld as exc:  # raised: the core skips the backend, showing this reason
            self.unavailable_reason = str(exc)
            raise
        self.native = NativeExtension("offload_cuda._native")
        self.host_calls = HostCalls(self.driver, self.native)
        skipped: list[str] = []
        try:
            for ordinal in range(count):
                try:
                    device = CudaDevice(self.driver, ordinal)
                except OffloadError as exc:  # this GPU only: the others still serve
                    skipped.append(f"GPU {ordinal}: {exc.details}{_compute_mode_note(self.driver, ordinal)}")
                    log.warning("offload-cuda: skipping %s", skipped[-1])
                    continue
                self.devices.append(_DeviceState(device, self.native))
        except BaseException:
            for state in self.devices:
                FAULTABLE.pop(state.device.context_address, None)
                state.device.release()
            self.devices = []
            raise
        if not self.devices and skipped:
            self.unavailable_reason = "no GPU could be used: " + "; ".join(skipped)
        return list(self.devices)

    @hookimpl
    def get_device_info(self, device: _DeviceState) -> Mapping[DeviceInfo, Any]:
        return device.device.info()

    # --- programs ------------------------------------------------------------------------------

    @hookimpl
    def build_target(self, device: _DeviceState) -> str:
        return _build.build_target(device.device)

    @hookimpl
    def build_source(self, device: _DeviceState, source: str, options: Sequence[str]) -> bytes:
        return _build.build_source(device.device, source, options)

    @hookimpl
    def is_valid_binary(self, device: _DeviceState, data: bytes) -> bool:
        return _binary.problem(data, device.device.sm, device.device.driver_version) is None

    @hookimpl
    def load_binary(self, device: _DeviceState, data: bytes) -> CudaImage:
        return CudaImage(device.device, data)

    @hookimpl
    def unload_binary(self, device: _DeviceState, image: CudaImage) -> None:
        self.run_or_defer(lambda: image.unload(device.device))

    @hookimpl
    def get_kernel(self, device: _DeviceState, image: CudaImage, name: str) -> CudaKernel:
        kernel = image.kernel(device.device, name)  # one per name: its record made once, under the image's lock
        if kernel.native_record is None and self.native is not None:
            with image.lock:
                if kernel.native_record is None:
                    kernel.native_record = self.native.kernel_record(
                        kernel.function, kernel.param_bytes, kernel.dynamic_shared_limit
                    )
        return kernel

    @hookimpl
    def get_global(self, device: _DeviceState, image: CudaImage, name: str) -> tuple[int, int]:
        return image.global_variable(device.device, name)

    @hookimpl
    def kernel_params(self, device: _DeviceState, kernel: CudaKernel) -> Sequence[KernelParam] | None:
        return kernel.params

    @hookimpl
    def max_group_size(self, device: _DeviceState, kernel: CudaKernel, dynamic_memory: int) -> int:
        return _occupancy.max_group_size(device.device, kernel, dynamic_memory)

    @hookimpl
    def max_cooperative_groups(self, device: _DeviceState, kernel: CudaKernel, launch: KernelLaunchSizeArgs) -> int:
        return _occupancy.max_cooperative_groups(device.device, kernel, launch)

    @hookimpl
    def launch_kernel_cooperative(
        self, device: _DeviceState, queue: CudaQueue | None, kernel: CudaKernel, args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        _occupancy.require_cooperative(device.device)
        if queue is not None:
            _launch.launch(device.device, queue.stream, kernel, args, launch, cooperative=True)
            return
        _launch.launch(device.device, device.device.legacy, kernel, args, launch, cooperative=True)
        d = device.device.driver
        check(d, d.cuStreamSynchronize(device.device.legacy), "cuStreamSynchronize")

    @hookimpl
    def mem_prefetch(self, device: _DeviceState, queue: CudaQueue, address: int, size: int, flags: MemMigrationFlag) -> None:
        """``cuMemPrefetchAsync`` of managed memory to the device, or to the host for DEVICE_TO_HOST
        alone. A hint: ignored on a GPU without CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
        (Windows/WSL, older GPUs), where the driver refuses every prefetch on its streams
        (INVALID_DEVICE), as upstream's tests and Intel's CUDA adapter skip it there."""
        if not device.device.attributes["CONCURRENT_MANAGED_ACCESS"]:
            return
        d = device.device.driver
        device.device.activate()
        location = d.CUmemLocation()
        if flags == MemMigrationFlag.DEVICE_TO_HOST:
            location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
        else:
            location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            location.id = device.device.ordinal
        check(d, d.cuMemPrefetchAsync(address, size, location, 0, queue.stream), "cuMemPrefetchAsync")

    @hookimpl
    def symbol_names(self, device: _DeviceState, image: CudaImage, kind: SymbolKind) -> list[str]:
        if kind is SymbolKind.KERNEL:
            return image.kernel_names(device.device)
        raise OffloadError(
            ErrorCode.UNSUPPORTED,
            f"{device.device.name}: the CUDA driver API has no call that lists a module's global variables "
            "(olIterateSymbols lists kernels only; find globals by name with olGetSymbol)",
        )

    @hookimpl
    def launch_kernel(
        self, device: _DeviceState, queue: CudaQueue | None, kernel: CudaKernel, args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        if queue is not None:
            _launch.launch(device.device, queue.stream, kernel, args, launch)
            return
        _launch.launch(device.device, device.device.legacy, kernel, args, launch)
        d = device.device.driver
        check(d, d.cuStreamSynchronize(device.device.legacy), "cuStreamSynchronize")

    # --- memory --------------------------------------------------------------------------------

    @hookimpl
    def mem_alloc(self, device: _DeviceState, alloc_type: AllocType, size: int) -> int:
        return _memory.alloc(device.device, alloc_type, size)

    @hookimpl
    def mem_free(self, device: _DeviceState, address: int, alloc_type: AllocType) -> None:
        self.run_or_defer(lambda: _memory.free(device.device, address, alloc_type))

    @hookimpl
    def mem_alloc_async(self, device: _DeviceState, queue: CudaQueue, alloc_type: AllocType, size: int) -> int:
        return device.pool.alloc(queue.stream, size)

    @hookimpl
    def mem_free_async(self, device: _DeviceState, queue: CudaQueue, address: int) -> None:
        self.run_or_defer(lambda: device.pool.free(queue.stream, address))

    @hookimpl
    def mem_register(self, device: _DeviceState, address: int, size: int, lock: bool) -> int:
        return _memory.register(device.device, address, size)

    @hookimpl
    def mem_unregister(self, device: _DeviceState, address: int) -> None:
        _memory.unregister(device.device, address)

    @hookimpl
    def data_submit(self, device: _DeviceState, dst: int, src: int, size: int, queue: CudaQueue | None) -> None:
        _memory.copy_to_device(device.device, dst, src, size, None if queue is None else queue.stream)

    @hookimpl
    def data_retrieve(self, device: _DeviceState, dst: int, src: int, size: int, queue: CudaQueue | None) -> None:
        _memory.copy_from_device(device.device, dst, src, size, None if queue is None else queue.stream)

    @hookimpl
    def data_exchange(
        self, src_device: _DeviceState, src: int, dst_device: _DeviceState, dst: int, size: int, queue: CudaQueue | None
    ) -> None:
        _memory.copy_between(
            src_device.device, src, dst_device.device, dst, size, None if queue is None else queue.stream
        )

    @hookimpl
    def data_copy_rect(
        self, device: _DeviceState, dst: int, dst_pitches: tuple[int, int], src: int, src_pitches: tuple[int, int],
        extent: tuple[int, int, int], queue: CudaQueue | None,
    ) -> None:
        _memory.copy_rect(device.device, dst, dst_pitches, src, src_pitches, extent, None if queue is None else queue.stream)

    @hookimpl
    def data_fill(self, device: _DeviceState, address: int, pattern: bytes, size: int, queue: CudaQueue | None) -> None:
        _memory.fill(device.device, address, pattern, size, None if queue is None else queue.stream)

    # --- queues and events (synchronize, has_pending_work, enqueue_host_call: DriverHooks) -------

    wait_queue = staticmethod(_queue.wait)
    queue_busy = staticmethod(_queue.stream_busy)

    @hookimpl
    def create_queue(self, device: _DeviceState) -> CudaQueue:
        return self.with_queue_record(CudaQueue(device.device, device.streams.acquire()))

    @hookimpl
    def adopt_stream(self, device: _DeviceState, stream: int) -> CudaQueue:
        return self.with_queue_record(_queue.adopt(device.device, stream))

    @hookimpl
    def queue_stream(self, device: _DeviceState, queue: CudaQueue) -> int:
        return int(queue.stream)

    @hookimpl
    def create_event(self, device: _DeviceState, queue: CudaQueue) -> CudaEvent:
        return _queue.create_event(device.device, device.events, queue)

    @hookimpl
    def destroy_event(self, device: _DeviceState, event: CudaEvent) -> None:
        device.events.release(event.handle)

    @hookimpl
    def wait_event(self, device: _DeviceState, queue: CudaQueue, event: CudaEvent) -> None:
        _queue.wait_event(device.device, queue, event)

    @hookimpl
    def foreign_stream_wait(self, device: _DeviceState, stream: int, event: CudaEvent) -> None:
        _queue.foreign_stream_wait(device.device, stream, event)

    @hookimpl
    def foreign_stream_sync(self, device: _DeviceState, stream: int) -> None:
        _queue.foreign_stream_sync(device.device, stream)

    @hookimpl
    def is_event_complete(self, device: _DeviceState, event: CudaEvent) -> bool:
        return _queue.is_event_complete(device.device, event)

    @hookimpl
    def sync_event(self, device: _DeviceState, event: CudaEvent) -> None:
        _queue.sync_event(device.device, event)

    @hookimpl
    def event_elapsed_time(self, device: _DeviceState, start: CudaEvent, end: CudaEvent) -> float:
        return _queue.event_elapsed_time(device.device, start, end)
