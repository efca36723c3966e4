"""The AMDGPU backend: the hookimpls of ``offload.hookspecs`` on hip-python.

``queue is None`` (a synchronous operation) runs on the device's null stream, then waits for it.
With more than one device, calls that act on HIP's "current device" select it first (a module
belongs to the device it was loaded on: HIP aborts on a mismatch).

From a host function (a thread HIP runs the function on, which must not call HIP): the releases
the core may ask there (``mem_free``, ``unload_binary``, the final teardown's hooks) are deferred
to the backend's deferred thread, which runs them once the function has returned (``_deferred``);
``has_pending_work`` of another queue asks HIP from a short-lived thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from offload import AllocType, DeviceInfo, ErrorCode, KernelLaunchSizeArgs, KernelParam, OffloadError, hookimpl

from . import _code_object, _device, _memory, _runtime
from ._device import HipDevice, check, select
from ._errors import raise_hip_error
from ._program import HipImage, HipKernel, LaunchBlocks, short_args_error
from ._deferred import off_thread
from ._queue import HIP_ERROR_NOT_READY, HIP_STREAM_NON_BLOCKING, HipEvent, HipQueue, HostCalls, take_errors

__all__ = ["AMDGPUBackend"]

log = logging.getLogger("offload_amdgpu")

HIP_EVENT_DEFAULT = 0  # timing enabled


class AMDGPUBackend:
    """The AMDGPU platform: one device per HIP device of this process.

    ``reason`` says why ``init`` found no device (no hip-python, no ``libamdhip64.so``, or HIP's
    own hipErrorNoDevice / hipErrorInvalidDevice); it is None when devices were found.
    """

    def __init__(self) -> None:
        self.hip: Any = None
        self.reason: str | None = None
        self.devices: list[HipDevice] = []
        self._host_calls: HostCalls | None = None
        self._launch_blocks = LaunchBlocks()
        self._module_launch: Any = None  # hip.hipModuleLaunchKernel, bound once (the hot path)
        self._peers: _memory.Peers = {}  # (from, to) ordinals -> peer access enabled

    # --- lifecycle ---------------------------------------------------------------------------

    @hookimpl
    def no_devices_reason(self) -> str | None:
        return self.reason

    @hookimpl
    def init(self) -> list[HipDevice]:
        hip, count, self.reason = _runtime.open_runtime()
        if not count:
            log.info("offload-amdgpu: no devices: %s", self.reason)
            return []
        self.hip = hip
        self._module_launch = hip.hipModuleLaunchKernel
        self._host_calls = HostCalls(hip)
        self.devices = [HipDevice(i, _device.read_target(hip, i), count > 1) for i in range(count)]
        return list(self.devices)

    @hookimpl
    def deinit(self) -> None:
        if self._deferring(None, self._deinit):
            return
        self._deinit()

    def _deinit(self) -> None:
        self.devices = []
        self._peers = {}

    @hookimpl
    def deinit_device(self, device: HipDevice) -> None:
        if self._deferring(None, lambda: self._deinit_device(device)):
            return
        self._deinit_device(device)

    def _deinit_device(self, device: HipDevice) -> None:
        """Destroy the events still alive (the core does not) and the pooled streams."""
        self._select(device)
        with device.lock:
            streams, device.streams = device.streams, []
            events, device.events = list(device.events), set()
        failures: list[OffloadError] = []
        for event in events:
            try:
                self._call("hipEventDestroy", self.hip.hipEventDestroy(event.handle))
            except OffloadError as exc:
                failures.append(exc)
        for stream in streams:
            try:
                self._call("hipStreamDestroy", self.hip.hipStreamDestroy(stream))
            except OffloadError as exc:
                failures.append(exc)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise ExceptionGroup(f"releasing device {device.ordinal} failed {len(failures)} times", failures)

    @hookimpl
    def get_device_info(self, device: HipDevice) -> Mapping[DeviceInfo, Any]:
        self._select(device)
        return _device.probe_info(self.hip, device)

    # --- helpers -----------------------------------------------------------------------------

    def _call(self, name: str, result: Any) -> Any:
        """Raise for a failed hip-python result tuple; return its value."""
        return check(self.hip, name, result)

    def _select(self, device: HipDevice) -> None:
        select(self.hip, device)

    def _deferring(self, queue: HipQueue | None, work: Callable[[], None]) -> bool:
        """On a host function's (HIP) thread: keep ``work`` for the deferred thread, return True.

        Its exception becomes an error of ``queue`` (default: the function's own queue)."""
        host_calls = self._host_calls
        own = None if host_calls is None else host_calls.running_for()
        if own is None:
            return False
        assert host_calls is not None
        host_calls.defer(queue or own, work)
        return True

    # --- programs ----------------------------------------------------------------------------

    @hookimpl
    def is_valid_binary(self, device: HipDevice, data: bytes) -> bool:
        try:
            _code_object.code_object_for(data, device.target)
        except ValueError:
            return False
        return True

    @hookimpl
    def load_binary(self, device: HipDevice, data: bytes) -> HipImage:
        try:
            code = _code_object.code_object_for(data, device.target)
        except ValueError as exc:
            raise OffloadError(
                ErrorCode.INVALID_BINARY, f"{_code_object.describe(data)} does not load on {device.target}: {exc}"
            ) from None
        self._select(device)
        module = self._call("hipModuleLoadData", self.hip.hipModuleLoadData(code.data))
        return HipImage(module, code)

    @hookimpl
    def unload_binary(self, device: HipDevice, image: HipImage) -> None:
        if self._deferring(None, lambda: self.unload_binary(device, image)):
            return
        self._select(device)
        self._call("hipModuleUnload", self.hip.hipModuleUnload(image.module))

    @hookimpl
    def get_kernel(self, device: HipDevice, image: HipImage, name: str) -> HipKernel:
        info = image.code.kernels.get(name)
        if info is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no kernel {name!r} in the code object")
        self._select(device)  # the module's device (HIP aborts on another)
        function = self._call(
            f"hipModuleGetFunction({name!r})", self.hip.hipModuleGetFunction(image.module, name.encode())
        )
        return HipKernel(function, info)

    @hookimpl
    def get_global(self, device: HipDevice, image: HipImage, name: str) -> tuple[int, int]:
        if name not in image.code.globals:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no global variable {name!r} in the code object")
        self._select(device)
        result = self.hip.hipModuleGetGlobal(image.module, name.encode())
        if result[0]:
            raise_hip_error(self.hip, f"hipModuleGetGlobal({name!r})", result[0])
        return int(result[1]), int(result[2])

    @hookimpl
    def kernel_params(self, device: HipDevice, kernel: HipKernel) -> Sequence[KernelParam]:
        return kernel.info.params

    @hookimpl
    def max_group_size(self, device: HipDevice, kernel: HipKernel, dynamic_memory: int) -> int:
        self._select(device)  # HIP computes occupancy for the current device
        result = self.hip.hipModuleOccupancyMaxPotentialBlockSize(kernel.function, dynamic_memory, 0)
        if result[0]:
            raise_hip_error(self.hip, "hipModuleOccupancyMaxPotentialBlockSize", result[0])
        return int(result[2])

    @hookimpl
    def launch_kernel(
        self, device: HipDevice, queue: HipQueue | None, kernel: HipKernel, args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        if args is not None and type(args) is not bytes:
            args = bytes(args)  # any bytes-like object: its bytes (len() of a memoryview counts items)
        size = 0 if args is None else len(args)
        if size < kernel.explicit_size:
            raise short_args_error(kernel, size)
        extra = self._launch_blocks.pack(args, size) if size else None
        gx, gy, gz = launch.num_groups
        bx, by, bz = launch.group_size
        shared = launch.dyn_shared_memory
        if queue is not None:
            status = self._module_launch(kernel.function, gx, gy, gz, bx, by, bz, shared, queue.stream, None, extra)[0]
            if status:
                raise_hip_error(self.hip, "hipModuleLaunchKernel", status)
            return
        self._select(device)  # the null stream is the current device's
        status = self._module_launch(kernel.function, gx, gy, gz, bx, by, bz, shared, None, None, extra)[0]
        _memory.finish(self.hip, "hipModuleLaunchKernel", status, None)

    # --- memory ------------------------------------------------------------------------------

    @hookimpl
    def mem_alloc(self, device: HipDevice, alloc_type: AllocType, size: int) -> int:
        return _memory.alloc(self.hip, device, alloc_type, size)

    @hookimpl
    def mem_free(self, device: HipDevice, address: int, alloc_type: AllocType) -> None:
        if self._deferring(None, lambda: self.mem_free(device, address, alloc_type)):
            return
        _memory.free(self.hip, device, address, alloc_type)

    @hookimpl
    def mem_register(self, device: HipDevice, address: int, size: int, lock: bool) -> int:
        """HIP's device pointer of the registered range (the core counts nested registrations
        and refuses partial overlaps)."""
        return _memory.register(self.hip, device, address, size)

    @hookimpl
    def mem_unregister(self, device: HipDevice, address: int) -> None:
        _memory.unregister(self.hip, device, address)

    @hookimpl
    def data_submit(self, device: HipDevice, dst: int, src: int, size: int, queue: HipQueue | None) -> None:
        if queue is not None:  # the hot path, inline
            status = self.hip.hipMemcpyHtoDAsync(dst, src, size, queue.stream)[0]
            if status:
                raise_hip_error(self.hip, "hipMemcpyHtoDAsync", status)
            return
        _memory.copy(self.hip, device, "hipMemcpyHtoDAsync", dst, src, size, None)

    @hookimpl
    def data_retrieve(self, device: HipDevice, dst: int, src: int, size: int, queue: HipQueue | None) -> None:
        if queue is not None:
            status = self.hip.hipMemcpyDtoHAsync(dst, src, size, queue.stream)[0]
            if status:
                raise_hip_error(self.hip, "hipMemcpyDtoHAsync", status)
            return
        _memory.copy(self.hip, device, "hipMemcpyDtoHAsync", dst, src, size, None)

    @hookimpl
    def data_exchange(
        self, src_device: HipDevice, src: int, dst_device: HipDevice, dst: int, size: int, queue: HipQueue | None
    ) -> None:
        stream = None if queue is None else queue.stream
        _memory.exchange(self.hip, self._peers, src_device, src, dst_device, dst, size, stream)

    @hookimpl
    def data_fill(self, device: HipDevice, address: int, pattern: bytes, size: int, queue: HipQueue | None) -> None:
        _memory.fill(self.hip, device, address, pattern, size, None if queue is None else queue.stream)

    # --- queues and events ---------------------------------------------------------------------

    @hookimpl
    def create_queue(self, device: HipDevice) -> HipQueue:
        with device.lock:
            stream = device.streams.pop() if device.streams else None
        if stream is None:
            self._select(device)
            stream = self._call("hipStreamCreateWithFlags", self.hip.hipStreamCreateWithFlags(HIP_STREAM_NON_BLOCKING))
        return HipQueue(device, stream)

    def _drain(self, query: Callable[[Any], Any], handle: Any) -> None:
        """While Python host functions are queued, wait by polling ``query`` with the GIL free.

        hip-python 6.4 / 7.x hold the GIL in blocking calls such as hipStreamSynchronize; a host
        function (which needs the GIL on the runtime's thread) would then deadlock them.
        """
        host_calls = self._host_calls
        delay = 0.0
        while host_calls is not None and host_calls.pending():
            if int(query(handle)[0]) != HIP_ERROR_NOT_READY:
                return
            time.sleep(delay)
            delay = min(1e-3, 2 * delay or 2e-5)

    @hookimpl
    def synchronize(self, device: HipDevice, queue: HipQueue, release: bool) -> None:
        assert self._host_calls is not None
        own = self._host_calls.running_for()
        if own is not None:
            self._synchronize_from_host_function(device, queue, release, own)
            return
        if self._host_calls.deferred.running_for() is queue:
            raise OffloadError(ErrorCode.INVALID_QUEUE, f"a host function on {queue!r} cannot wait for its own queue")
        self._drain(self.hip.hipStreamQuery, queue.stream)
        status = self.hip.hipStreamSynchronize(queue.stream)[0]
        self._host_calls.deferred.wait(queue)  # work its host functions asked for, run after them
        try:
            if status:
                raise_hip_error(self.hip, "hipStreamSynchronize", status)
            take_errors(queue)
        finally:
            if release:
                with device.lock:
                    device.streams.append(queue.stream)

    def _synchronize_from_host_function(self, device: HipDevice, queue: HipQueue, release: bool, own: HipQueue) -> None:
        """synchronize called on a host function's thread (of queue ``own``), where HIP may not
        be called. The own queue cannot be waited for (the function holds it): released (the final
        olShutDown), it drops the host functions queued behind and goes back to the pool once the
        function has returned. Another queue released is synchronized by the deferred thread; one
        merely waited for is waited for by a short-lived thread."""
        if queue is own:
            if not release:
                raise OffloadError(ErrorCode.INVALID_QUEUE, f"a host function on {queue!r} cannot wait for its own queue")
            queue.released = True
            self._deferring(queue, lambda: self._return_stream(device, queue.stream))
            take_errors(queue)
            return
        if release:
            self._deferring(own, lambda: self.synchronize(device, queue, True))
            return
        off_thread(lambda: self.synchronize(device, queue, False))

    @staticmethod
    def _return_stream(device: HipDevice, stream: Any) -> None:
        with device.lock:
            device.streams.append(stream)

    @hookimpl
    def has_pending_work(self, device: HipDevice, queue: HipQueue) -> bool:
        if queue.deferred:
            return True
        host_calls = self._host_calls
        if host_calls is not None and host_calls.running_for() is not None:  # no HIP call on this thread
            if host_calls.running_for() is queue:
                return True
            return bool(off_thread(lambda: self.has_pending_work(device, queue)))
        status = self.hip.hipStreamQuery(queue.stream)[0]
        if not status:
            return False
        if int(status) == HIP_ERROR_NOT_READY:
            return True
        raise_hip_error(self.hip, "hipStreamQuery", status)

    @hookimpl
    def enqueue_host_call(self, device: HipDevice, queue: HipQueue, callback: Callable[[], None]) -> None:
        assert self._host_calls is not None
        self._host_calls.enqueue(queue, callback)

    @hookimpl
    def create_event(self, device: HipDevice, queue: HipQueue) -> HipEvent:
        hip = self.hip
        self._select(device)
        handle = self._call("hipEventCreateWithFlags", hip.hipEventCreateWithFlags(HIP_EVENT_DEFAULT))
        status = hip.hipEventRecord(handle, queue.stream)[0]
        if status:
            hip.hipEventDestroy(handle)
            raise_hip_error(hip, "hipEventRecord", status)
        event = HipEvent(handle, queue)
        with device.lock:
            device.events.add(event)
        return event

    @hookimpl
    def destroy_event(self, device: HipDevice, event: HipEvent) -> None:
        with device.lock:
            device.events.discard(event)
        self._call("hipEventDestroy", self.hip.hipEventDestroy(event.handle))

    @hookimpl
    def wait_event(self, device: HipDevice, queue: HipQueue, event: HipEvent) -> None:
        self._call("hipStreamWaitEvent", self.hip.hipStreamWaitEvent(queue.stream, event.handle, 0))

    @hookimpl
    def is_event_complete(self, device: HipDevice, event: HipEvent) -> bool:
        status = self.hip.hipEventQuery(event.handle)[0]
        if not status:
            return True
        if int(status) == HIP_ERROR_NOT_READY:
            return False
        raise_hip_error(self.hip, "hipEventQuery", status)

    @hookimpl
    def sync_event(self, device: HipDevice, event: HipEvent) -> None:
        self._drain(self.hip.hipEventQuery, event.handle)
        self._call("hipEventSynchronize", self.hip.hipEventSynchronize(event.handle))
        take_errors(event.queue)

    @hookimpl
    def event_elapsed_time(self, device: HipDevice, start: HipEvent, end: HipEvent) -> float:
        result = self.hip.hipEventElapsedTime(start.handle, end.handle)
        if result[0]:
            if int(result[0]) == HIP_ERROR_NOT_READY:
                raise OffloadError(ErrorCode.INVALID_ARGUMENT, "an event is not complete yet (olSyncEvent it first)")
            raise_hip_error(self.hip, "hipEventElapsedTime", result[0])
        return float(result[1])
