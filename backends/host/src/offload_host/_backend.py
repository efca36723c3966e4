"""The host backend: the hookimpls of ``offload.hookspecs`` for one CPU device."""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from offload import AllocType, DeviceInfo, ErrorCode, KernelLaunchSizeArgs, KernelParam, OffloadError, SymbolKind, hookimpl
from offload.backend.support import HostCopy, report_device_fault
from offload.backend.build import kernel_include_dir

from . import _device_info
from ._native import copy_on as _copy_on
from ._native import ENTRY_POINTS, executor_create, executor_destroy, pages_alloc, pages_free, pool_create, pool_destroy
from ._native import checked_alloc, checked_free, pool_fault, pool_on_fault, pool_set_local_limit
from ._native import fill_on as _fill_on
from ._native import launch as _launch
from ._cooperative import MAX_COOPERATIVE_GROUPS, run_cooperative
from ._image import HostImage, image_problem, kernel_params_of
from ._queue import HostEvent, HostQueue
from .build import build_identity, build_program

_partial = functools.partial


def _too_much_local_memory(device: HostDevice, launch: KernelLaunchSizeArgs) -> OffloadError:
    return OffloadError(
        ErrorCode.OUT_OF_RESOURCES,
        f"DynSharedMemory {launch.dyn_shared_memory} exceeds the host's local memory limit {device.local_memory_limit}",
    )


class HostDevice:
    """The CPU: a worker pool for kernel groups, the executor thread running queues' native work,
    and the sizes of its allocations."""

    __slots__ = ("pool", "executor", "local_memory_limit", "allocations", "lock", "checked")

    def __init__(self, threads: int, checked: bool = False) -> None:
        self.pool = pool_create(threads)
        try:
            self.executor = executor_create()
        except BaseException:
            pool_destroy(self.pool)
            raise
        self.local_memory_limit = _device_info.local_memory_limit()
        pool_set_local_limit(self.pool, self.local_memory_limit)  # what the native launches check
        # the first fault error made for the pool tells the core, which then refuses the copies and
        # fills of this device's memory that it makes without a hook (pool_destroy drops this)
        pool_on_fault(self.pool, _partial(report_device_fault, self))
        self.allocations: dict[int, int] = {}  # address -> size of the pages mapped for it
        self.lock = threading.Lock()
        self.checked = checked  # OFFLOAD_HOST_CHECK=1: allocations end at a guard page (_fault.c)

    def refuse_if_faulted(self) -> None:
        """Raise the device's fault (BACKEND_FAILURE) once a kernel faulted on it: as a CUDA context
        after an illegal address, the device takes no more work until olShutDown."""
        fault = pool_fault(self.pool)
        if fault is not None:
            raise fault


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class HostBackend:
    """One HOST platform with one CPU device (every core of this process's affinity mask)."""

    @hookimpl
    def init(self) -> list[HostDevice]:
        workers = max(0, len(os.sched_getaffinity(0)) - 1)  # the launching thread runs groups too
        return [HostDevice(workers, checked=os.environ.get("OFFLOAD_HOST_CHECK") == "1")]

    @hookimpl
    def deinit(self) -> None:
        """Nothing is global to the backend; each device released its pool."""

    @hookimpl
    def deinit_device(self, device: HostDevice) -> None:
        try:
            executor_destroy(device.executor)
        finally:
            pool_destroy(device.pool)

    @hookimpl
    def get_device_info(self, device: HostDevice) -> Mapping[DeviceInfo, Any]:
        return _device_info.probe()

    # --- programs ----------------------------------------------------------------------------

    @hookimpl
    def build_target(self, device: HostDevice) -> str:
        """The machine, the C compiler with its version, its default flags and the CPU where they
        name ``native`` (``build_identity``)."""
        return build_identity([f"-I{kernel_include_dir()}"])

    @hookimpl
    def build_source(self, device: HostDevice, source: str, options: Sequence[str]) -> bytes:
        """C source through ``build_program`` (the system compiler), ``offload_kernel.h`` on the
        path; not in ``build_program``'s own cache (``offload.build`` caches the image)."""
        return build_program(source, cflags=[f"-I{kernel_include_dir()}", *options], cache=False)

    @hookimpl
    def is_valid_binary(self, device: HostDevice, data: bytes) -> bool:
        """The checks of load_binary without loading (a trial load in a child process)."""
        try:
            return image_problem(data) is None
        except OffloadError:  # no scratch copy could be made: it would not load either
            return False

    @hookimpl
    def load_binary(self, device: HostDevice, data: bytes) -> HostImage:
        device.refuse_if_faulted()
        return HostImage(data)

    @hookimpl
    def unload_binary(self, device: HostDevice, image: HostImage) -> None:
        image.unload()

    @hookimpl
    def get_kernel(self, device: HostDevice, image: HostImage, name: str) -> int:
        return image.kernel(name)

    @hookimpl
    def get_global(self, device: HostDevice, image: HostImage, name: str) -> tuple[int, int]:
        return image.global_variable(name)

    @hookimpl
    def kernel_params(self, device: HostDevice, kernel: int) -> Sequence[KernelParam] | None:
        """What the kernel declared with OFFLOAD_KERNEL_PARAMS; None for an undeclared kernel
        (launchable, its argument buffer unchecked: see offload_host.h)."""
        return kernel_params_of.get(kernel)

    @hookimpl
    def launch_kernel(
        self, device: HostDevice, queue: HostQueue | None, kernel: int, args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        if launch.dyn_shared_memory > device.local_memory_limit:
            raise _too_much_local_memory(device, launch)
        if kernel_params_of.get(kernel) is None:  # undeclared: it may read past a short buffer, let it read zeros
            args = _padded(args)
        try:  # the grid is parsed natively, once per launch object (it is immutable)
            if queue is None:
                _launch(device.pool, kernel, args, launch)
            elif queue.launch(device.pool, kernel, args, launch):
                queue.start_worker()  # the arguments were copied: the caller may reuse its buffer
        except OverflowError as exc:  # a dimension's global ids beyond uint32: see _native.c
            raise OffloadError(ErrorCode.INVALID_SIZE, str(exc)) from None

    @hookimpl
    def max_cooperative_groups(self, device: HostDevice, kernel: int, launch: KernelLaunchSizeArgs) -> int:
        """One thread per group: at most ``MAX_COOPERATIVE_GROUPS``, whatever the kernel."""
        return MAX_COOPERATIVE_GROUPS

    @hookimpl
    def launch_kernel_cooperative(
        self, device: HostDevice, queue: HostQueue | None, kernel: int, args: Any, launch: KernelLaunchSizeArgs
    ) -> None:
        """Every group at once on a thread of its own (``_cooperative``); on a queue, in queue order."""
        device.refuse_if_faulted()
        if launch.dyn_shared_memory > device.local_memory_limit:
            raise _too_much_local_memory(device, launch)
        if kernel_params_of.get(kernel) is None:  # undeclared: it may read past a short buffer, let it read zeros
            args = _padded(args)
        if queue is None:
            run_cooperative(device.pool, kernel, args, launch)
            return
        copied = None if args is None else bytes(args)  # the caller may reuse its buffer at once
        queue.submit(functools.partial(run_cooperative, device.pool, kernel, copied, launch))

    # --- memory ------------------------------------------------------------------------------

    @hookimpl
    def mem_alloc(self, device: HostDevice, alloc_type: AllocType, size: int) -> int:
        """Pages of its own per allocation: once freed they are unmapped, so a copy into freed
        memory is refused by the core's mapping check instead of corrupting the C heap. In the
        checking mode the allocation ends where a PROT_NONE page begins (``checked_alloc``)."""
        device.refuse_if_faulted()
        address = checked_alloc(size, 1) if device.checked else pages_alloc(size)
        with device.lock:
            device.allocations[address] = size
        return address

    @hookimpl
    def mem_alloc_aligned(self, device: HostDevice, alloc_type: AllocType, size: int, alignment: int) -> int:
        """Whole pages are page aligned; a larger alignment maps ``size + alignment`` bytes and
        unmaps the unaligned head and the tail, so the allocation is still pages of its own."""
        page = mmap.PAGESIZE
        if device.checked:
            device.refuse_if_faulted()
            address = checked_alloc(size, alignment)
            with device.lock:
                device.allocations[address] = size
            return address
        if alignment <= page:
            return self.mem_alloc(device, alloc_type, size)
        span = _round_up(size, page) + alignment
        raw = pages_alloc(span)
        start = _round_up(raw, alignment)
        end = start + _round_up(size, page)
        if start > raw:
            pages_free(raw, start - raw)
        if raw + span > end:
            pages_free(end, raw + span - end)
        with device.lock:
            device.allocations[start] = size
        return start

    @hookimpl
    def symbol_names(self, device: HostDevice, image: HostImage, kind: SymbolKind) -> list[str]:
        return image.symbol_names(kind is SymbolKind.KERNEL)

    @hookimpl
    def mem_free(self, device: HostDevice, address: int) -> None:
        with device.lock:
            size = device.allocations.pop(address)
        if device.checked:
            checked_free(address)
        else:
            pages_free(address, size)

    @hookimpl
    def mem_register(self, device: HostDevice, address: int, size: int, lock: bool) -> int:
        """Host memory is the device's memory: registering only page-locks it when asked."""
        if lock and _libc().mlock(ctypes.c_void_p(address), ctypes.c_size_t(size)) != 0:
            errno = ctypes.get_errno()
            raise OffloadError(ErrorCode.OUT_OF_RESOURCES, f"mlock failed: {os.strerror(errno)}")
        return address

    @hookimpl
    def mem_unregister(self, device: HostDevice, address: int, size: int, unlock: bool) -> None:
        if unlock:
            _libc().munlock(ctypes.c_void_p(address), ctypes.c_size_t(size))

    @hookimpl
    def data_submit(self, device: HostDevice, dst: int, src: int, size: int, queue: HostQueue | None) -> None:
        self._copy(device, dst, src, size, queue)

    @hookimpl
    def data_retrieve(self, device: HostDevice, dst: int, src: int, size: int, queue: HostQueue | None) -> None:
        self._copy(device, dst, src, size, queue)

    @hookimpl
    def data_exchange(
        self, src_device: HostDevice, src: int, dst_device: HostDevice, dst: int, size: int, queue: HostQueue | None
    ) -> None:
        self._copy(src_device, dst, src, size, queue)

    @staticmethod
    def _copy(device: HostDevice, dst: int, src: int, size: int, queue: HostQueue | None) -> None:
        """Device memory of this backend is host memory: every copy is a memmove (big ones split
        over the device's pool)."""
        if queue is None:
            _copy_on(device.pool, dst, src, size)
        elif queue.copy(device.pool, dst, src, size):
            queue.start_worker()

    @hookimpl
    def data_fill(self, device: HostDevice, address: int, pattern: bytes, size: int, queue: HostQueue | None) -> None:
        if queue is None:
            _fill_on(device.pool, address, pattern, size)
        elif queue.fill(device.pool, address, pattern, size):
            queue.start_worker()

    # --- native entry points (the core's compiled path; _hostentry.c) ---------------------------

    @hookimpl
    def native_entry_points(self, device: HostDevice) -> object:
        """Launches and pending-work queries from the core's C: see _hostentry.c for what
        each one takes on and what it leaves to the hooks above."""
        return ENTRY_POINTS

    @hookimpl
    def native_word(self, device: HostDevice, native: object) -> int | None:
        """The device's pool, a queue's native object, a declared kernel's function address (an
        undeclared kernel's buffer is padded by launch_kernel: it stays on the hook)."""
        if native is device:
            return device.pool
        if isinstance(native, HostQueue):
            return native.word()
        if type(native) is int and kernel_params_of.get(native) is not None:
            return native
        return None

    # --- queues and events ---------------------------------------------------------------------

    @hookimpl
    def create_queue(self, device: HostDevice) -> HostQueue:
        device.refuse_if_faulted()
        return HostQueue(device.executor, device.pool)

    @hookimpl
    def synchronize(self, device: HostDevice, queue: HostQueue, release: bool) -> None:
        queue.synchronize(release)

    @hookimpl
    def has_pending_work(self, device: HostDevice, queue: HostQueue) -> bool:
        return queue.pending()

    @hookimpl
    def enqueue_host_call(self, device: HostDevice, queue: HostQueue, callback: Callable[[], None]) -> None:
        if type(callback) is HostCopy:  # the core's queued host-to-host olMemcpy: a native copy, no Python on the queue
            if queue.copy(device.pool, callback.dst, callback.src, callback.size):
                queue.start_worker()
            return
        queue.submit(callback)

    @hookimpl
    def create_event(self, device: HostDevice, queue: HostQueue) -> HostEvent:
        return queue.record()

    @hookimpl
    def wait_event(self, device: HostDevice, queue: HostQueue, event: HostEvent) -> None:
        if queue.wait_event(event):
            queue.start_worker()

    @hookimpl
    def is_event_complete(self, device: HostDevice, event: HostEvent) -> bool:
        return event.is_complete()

    @hookimpl
    def sync_event(self, device: HostDevice, event: HostEvent) -> None:
        errors = event.wait()  # the errors of the operations before the event, if any
        if errors:
            cast(HostQueue, event.queue).raise_errors(errors)

    @hookimpl
    def event_elapsed_time(self, device: HostDevice, start: HostEvent, end: HostEvent) -> float:
        for name, event in (("StartEvent", start), ("EndEvent", end)):
            if not event.is_complete():
                raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{name} is not complete yet (olSyncEvent it first)")
        return (end.timestamp_ns - start.timestamp_ns) / 1e6


PARAM_LIMIT = 4096  # argument bytes an undeclared kernel may read: a shorter buffer is zero-padded


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _padded(args: Any) -> Any:
    """``args`` zero-padded to ``PARAM_LIMIT`` bytes (as is when already that long): an undeclared
    kernel reading past a short argument buffer reads zeros, never other heap data."""
    if args is None:
        return bytes(PARAM_LIMIT)
    view = memoryview(args)
    if view.nbytes >= PARAM_LIMIT:
        return args
    padded = bytearray(PARAM_LIMIT)
    padded[: view.nbytes] = view.cast("B") if view.c_contiguous else view.tobytes()
    return padded
