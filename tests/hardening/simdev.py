"""``simdev``: an in-process test backend for the hardening tests (not a simulator of any driver).

Its device memory is real host memory (ctypes buffers) behind fake device addresses, so every
copy it receives can be checked: an access outside a live buffer is recorded as a violation
instead of being made. Its "programs" are JSON texts naming kernels, their parameters (or null:
unknown) and globals; a kernel run sleeps ``sleep`` seconds and records a violation if its program
is unloaded meanwhile. Queues are in-order worker threads. ``VIOLATIONS`` lists every lifetime or
range rule the core let through; the tests assert it stays empty.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import queue as _stdqueue
import threading
import time
from collections.abc import Callable
from typing import Any

import offload as ol
from offload import hookimpl

VIOLATIONS: list[str] = []
IMAGES: list[Any] = []  # every image ever loaded (``.loaded`` tells whether it still is)
BASE = 0x7E00_0000_0000  # fake device addresses: never dereferenced by the host


class Image:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.kernels: dict[str, Any] = spec.get("kernels", {})
        self.globals: dict[str, int] = spec.get("globals", {})
        self.sleep = float(spec.get("sleep", 0.0))
        self.running = 0
        self.loaded = True
        IMAGES.append(self)


class Kernel:
    def __init__(self, image: Image, name: str) -> None:
        self.image, self.name = image, name


class SimQueue:
    def __init__(self) -> None:
        self.ops: _stdqueue.SimpleQueue[Any] = _stdqueue.SimpleQueue()
        self.submitted = 0
        self.completed = 0
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._work, daemon=True, name="simdev-queue")
        self.thread.start()

    def submit(self, fn: Any) -> None:
        self.submitted += 1
        self.ops.put(fn)

    def _work(self) -> None:
        while True:
            fn = self.ops.get()
            if fn is None:
                return
            try:
                fn()
            except BaseException as exc:
                self.errors.append(exc)
            self.completed += 1


class SimDevice:
    def __init__(self) -> None:
        self.memory: dict[int, ctypes.Array[Any]] = {}  # fake base -> buffer
        self.next = itertools.count(BASE, 1 << 20)
        self.lock = threading.Lock()

    def host(self, address: int, size: int, what: str) -> int | None:
        """The host address behind [address, address + size) of device memory, or None (violation)."""
        with self.lock:
            for base, buffer in self.memory.items():
                if base <= address and address + size <= base + len(buffer):
                    return ctypes.addressof(buffer) + (address - base)
        VIOLATIONS.append(f"{what}: [{address:#x}, +{size}) is not live device memory")
        return None


class SimBackend:
    """The hookimpls; ``max_group`` etc. are the limits it reports."""

    @hookimpl
    def init(self) -> list[SimDevice]:
        return [SimDevice()]

    @hookimpl
    def deinit(self) -> None:
        pass

    @hookimpl
    def get_device_info(self, device: SimDevice) -> dict[ol.DeviceInfo, Any]:
        D = ol.DeviceInfo
        return {
            D.NAME: "simdev",
            D.VENDOR: "offload tests",
            D.DRIVER_VERSION: "0",
            D.MAX_WORK_GROUP_SIZE: 256,
            D.MAX_WORK_GROUP_SIZE_PER_DIMENSION: ol.Dimensions(256, 128, 64),
            D.MAX_WORK_SIZE: 1 << 20,
            D.MAX_WORK_SIZE_PER_DIMENSION: ol.Dimensions(1 << 20, 1 << 16, 1 << 10),
        }

    @hookimpl
    def is_valid_binary(self, device: SimDevice, data: bytes) -> bool:
        return data.startswith(b"{")

    @hookimpl
    def load_binary(self, device: SimDevice, data: bytes) -> Image:
        try:
            return Image(json.loads(data))
        except ValueError as exc:
            raise ol.OffloadError(ol.ErrorCode.INVALID_BINARY, str(exc)) from None

    @hookimpl
    def unload_binary(self, device: SimDevice, image: Image) -> None:
        if image.running:
            VIOLATIONS.append(f"unloaded while {image.running} kernel run(s) were running")
        image.loaded = False

    @hookimpl
    def get_kernel(self, device: SimDevice, image: Image, name: str) -> Kernel:
        if name not in image.kernels:
            raise ol.OffloadError(ol.ErrorCode.NOT_FOUND, name)
        return Kernel(image, name)

    @hookimpl
    def kernel_params(self, device: SimDevice, kernel: Kernel) -> list[ol.KernelParam] | None:
        params = kernel.image.kernels[kernel.name]
        return None if params is None else [ol.KernelParam(o, s) for o, s in params]

    @hookimpl
    def get_global(self, device: SimDevice, image: Image, name: str) -> tuple[int, int]:
        if name not in image.globals:
            raise ol.OffloadError(ol.ErrorCode.NOT_FOUND, name)
        size = image.globals[name]
        address = self.mem_alloc(device, ol.AllocType.DEVICE, size)
        return address, size

    @hookimpl
    def launch_kernel(self, device: SimDevice, queue: SimQueue | None, kernel: Kernel, args: Any, launch: Any) -> None:
        image = kernel.image

        def run() -> None:
            if not image.loaded:
                VIOLATIONS.append(f"kernel {kernel.name} ran after its program was unloaded")
            image.running += 1
            time.sleep(image.sleep)
            image.running -= 1

        if queue is None:
            run()
        else:
            queue.submit(run)

    @hookimpl
    def mem_alloc(self, device: SimDevice, alloc_type: ol.AllocType, size: int) -> int:
        address = next(device.next)
        with device.lock:
            device.memory[address] = (ctypes.c_char * size)()
        return address

    @hookimpl
    def mem_free(self, device: SimDevice, address: int) -> None:
        with device.lock:
            if device.memory.pop(address, None) is None:
                VIOLATIONS.append(f"mem_free of {address:#x}, not a live base")

    def _submit(self, queue: SimQueue | None, fn: Any) -> None:
        if queue is None:
            fn()
        else:
            queue.submit(fn)

    def _copy(self, queue: SimQueue | None, size: int, source: Callable[[], Any], target: Callable[[], Any]) -> None:
        """Copy ``size`` bytes, now or in queue order, from ``source()`` to ``target()`` (resolved when
        the copy runs, in that order); a side that resolves to None (a refused range, recorded as a
        violation) copies nothing."""

        def copy() -> None:
            frm = source()
            to = target()
            if frm is not None and to is not None:
                ctypes.memmove(to, frm, size)

        self._submit(queue, copy)

    @hookimpl
    def data_submit(self, device: SimDevice, dst: int, src: int, size: int, queue: SimQueue | None) -> None:
        self._copy(queue, size, lambda: src, lambda: device.host(dst, size, "data_submit"))

    @hookimpl
    def data_retrieve(self, device: SimDevice, dst: int, src: int, size: int, queue: SimQueue | None) -> None:
        self._copy(queue, size, lambda: device.host(src, size, "data_retrieve"), lambda: dst)

    @hookimpl
    def data_exchange(self, src_device: SimDevice, src: int, dst_device: SimDevice, dst: int, size: int, queue: Any) -> None:
        self._copy(
            queue, size, lambda: src_device.host(src, size, "data_exchange src"), lambda: dst_device.host(dst, size, "data_exchange dst")
        )

    @hookimpl
    def data_fill(self, device: SimDevice, address: int, pattern: bytes, size: int, queue: SimQueue | None) -> None:
        def fill() -> None:
            target = device.host(address, size, "data_fill")
            if target is not None:
                data = (pattern * (size // len(pattern)))[:size]
                ctypes.memmove(target, data, size)

        self._submit(queue, fill)

    @hookimpl
    def create_queue(self, device: SimDevice) -> SimQueue:
        return SimQueue()

    @hookimpl
    def synchronize(self, device: SimDevice, queue: SimQueue, release: bool) -> None:
        if threading.current_thread() is queue.thread:
            if not release:
                raise ol.OffloadError(ol.ErrorCode.INVALID_QUEUE, "a host function cannot wait for its own queue")
            while True:  # released from its own host function: drop the work behind it
                try:
                    op = queue.ops.get_nowait()
                except _stdqueue.Empty:
                    break
                if op is not None:
                    queue.completed += 1
            queue.ops.put(None)  # the thread ends once the running function returns
            return
        if queue.completed != queue.submitted:
            done = threading.Event()
            queue.submit(done.set)
            done.wait()
        if release:
            queue.ops.put(None)
            queue.thread.join()
        if queue.errors:
            errors, queue.errors = queue.errors, []
            if len(errors) == 1:
                raise errors[0]
            raise ExceptionGroup("simdev queue errors", [e for e in errors if isinstance(e, Exception)])

    @hookimpl
    def has_pending_work(self, device: SimDevice, queue: SimQueue) -> bool:
        return queue.completed != queue.submitted

    @hookimpl
    def enqueue_host_call(self, device: SimDevice, queue: SimQueue, callback: Any) -> None:
        queue.submit(callback)


def program(kernels: dict[str, Any], globals_: dict[str, int] | None = None, sleep: float = 0.0) -> bytes:
    """A simdev program: kernel name -> [[offset, size], ...] (or None: parameters unknown)."""
    return json.dumps({"kernels": kernels, "globals": globals_ or {}, "sleep": sleep}).encode()


def offload_threads() -> list[threading.Thread]:
    """Threads of the library or its backends still alive (queue workers, teardown)."""
    names = ("offload", "simdev")
    return [t for t in threading.enumerate() if t.name.startswith(names)]
