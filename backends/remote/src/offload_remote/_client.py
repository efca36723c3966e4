"""``RemoteBackend``: a device in another process. With ``OFFLOAD_REMOTE=local``, ``init`` starts
the server (``_server``: offload's host backend, loaded alone with ``OFFLOAD_BACKENDS=host``) on a
local socket (unset: no devices); each hook is a request
on a connection of the calling thread. Device pointers are the server's, opaque here: the client
hands out addresses of its own from an inaccessible reservation (``mmap(PROT_NONE)``, so they
collide with nothing of this process) and translates them, in copies and in the pointer
parameters of a launch (``olGetKernelParamsExt`` on the server says which they are). Queues,
events and host functions are the client's (``_queue``)."""

from __future__ import annotations

import bisect
import ctypes
import os
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from offload import AllocType, DeviceInfo, ErrorCode, KernelLaunchPropType, KernelLaunchSizeArgs, OffloadError, SymbolInfo, SymbolKind, hookimpl
from offload.hookspecs import HOOK_NAMES
from offload.backend.support import raise_kept_errors

from ._queue import Marker, Queue, QueueCalls

_SPAN = 1 << 40  # the client's address space for device pointers: reserved, never accessible
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype, _libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
#: hooks the server's backend may lack: served only where it has them (``served_hooks``)
_SERVER_HOOKS = ("max_group_size", "launch_kernel_cooperative", "max_cooperative_groups", "symbol_names", "get_global")


_ADDRESS, _SIZE = SymbolInfo.GLOBAL_VARIABLE_ADDRESS, SymbolInfo.GLOBAL_VARIABLE_SIZE


Device = tuple[str, int]  # ("@dev", index): the server's device, as requests name it
Kernel = tuple[Any, Any, list[int]]  # the server's symbol, its parameters, the offsets of its pointers


def _hooks(cls: type) -> type:
    """Mark every method named after a hook as its implementation (``offload.hookimpl``)."""
    for name in HOOK_NAMES:
        if name in vars(cls):
            setattr(cls, name, hookimpl(vars(cls)[name]))
    return cls


@_hooks
class RemoteBackend:
    def __init__(self) -> None:
        self.local = threading.local()
        self.lock = threading.Lock()
        self.bases: list[int] = []  # every client address handed out, ascending
        self.table: dict[int, tuple[int, int]] = {}  # live client address -> (size, server address)
        self.calls = QueueCalls("offload-remote")

    # --- the connection and the addresses ---------------------------------------------------

    def rpc(self, *request: Any) -> Any:
        if not hasattr(self.local, "conn"):
            self.local.conn = self.connect()
        try:
            self.local.conn.send(request)
            status, *reply = self.local.conn.recv()
        except (OSError, EOFError) as exc:  # the server is gone: the device is lost
            raise OffloadError(ErrorCode.BACKEND_FAILURE, f"remote device lost: {exc!r}") from None
        if status == "error":
            raise OffloadError(*reply)
        return reply[0]

    def place(self, server: int, size: int) -> int:
        """A client address for ``size`` bytes at the server's ``server`` (never reused)."""
        with self.lock:
            address, self.next = self.next, self.next + -(-max(size, 1) // 4096) * 4096
            if self.next > self.base + _SPAN:
                raise OffloadError(ErrorCode.OUT_OF_RESOURCES, "the client's device address space is used up")
            self.bases.append(address)
            self.table[address] = (size, server)
        return address

    def server(self, address: int) -> Any:
        """The server's address of client ``address``; None outside every live range (the core
        gives data hooks only addresses inside one)."""
        i = bisect.bisect_right(self.bases, address) - 1
        entry = self.table.get(self.bases[i]) if i >= 0 else None
        if entry is None or address >= self.bases[i] + max(entry[0], 1):
            return None
        return entry[1] + address - self.bases[i]

    def run(self, queue: Queue | None, op: Callable[[], None]) -> None:
        if queue is None:
            op()
        else:
            queue.put(op)

    # --- lifecycle --------------------------------------------------------------------------

    def init(self) -> Sequence[Device]:
        self.infos: list[dict[DeviceInfo, Any]] = []
        if os.environ.get("OFFLOAD_REMOTE") != "local":
            return []  # not asked for: no server, no devices (no_devices_reason)
        import subprocess, tempfile  # here, as multiprocessing: olInit without a server is spared them
        from multiprocessing.connection import Client  # here: without a server olInit is spared it (pickle, socket)

        self.folder = tempfile.TemporaryDirectory(prefix="offload-remote-")
        self.path, self.key = os.path.join(self.folder.name, "socket"), os.urandom(32)
        self.connect = lambda: Client(self.path, "AF_UNIX", authkey=self.key)  # a connection of the calling thread
        env = {**os.environ, "OFFLOAD_BACKENDS": "host", "OFFLOAD_REMOTE_KEY": self.key.hex()}
        self.process = subprocess.Popen([sys.executable, "-m", "offload_remote._server", self.path], env=env)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.path):  # the server renames its socket into place once it listens
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise OffloadError(ErrorCode.BACKEND_FAILURE, f"the remote server did not start (exit {self.process.poll()})")
            time.sleep(0.01)
        self.local.conn = self.connect()
        self.infos, implemented = self.local.conn.recv()
        self.served = {hook for hook in _SERVER_HOOKS if hook in implemented}
        base = _libc.mmap(None, _SPAN, 0, 0x22 | 0x4000, -1, 0)  # PROT_NONE; MAP_PRIVATE|ANONYMOUS|NORESERVE
        if base in (None, ctypes.c_void_p(-1).value):
            raise OffloadError(ErrorCode.OUT_OF_RESOURCES, f"cannot reserve the address space (errno {ctypes.get_errno()})")
        self.base = self.next = base
        return [("@dev", index) for index in range(len(self.infos))]

    def no_devices_reason(self) -> str | None:
        return None if self.infos else "OFFLOAD_REMOTE is not 'local' (set it so to start a local server)"

    def served_hooks(self) -> list[str] | None:
        """Every hook of this class but those the server's backend lacks."""
        return [hook for hook in HOOK_NAMES if hook in vars(RemoteBackend) and (hook not in _SERVER_HOOKS or hook in self.served)] if self.infos else None

    def deinit(self) -> None:
        if not hasattr(self, "process"):
            return
        try:
            self.rpc("exit")
        finally:
            self.process.wait(timeout=10)
            _libc.munmap(ctypes.c_void_p(self.base), ctypes.c_size_t(_SPAN))
            self.folder.cleanup()

    def get_device_info(self, device: Device) -> dict[DeviceInfo, Any]:
        return {**self.infos[device[1]], DeviceInfo.NAME: "remote " + self.infos[device[1]][DeviceInfo.NAME]}

    # --- memory -----------------------------------------------------------------------------

    def mem_alloc(self, device: Device, alloc_type: AllocType, size: int) -> int:
        if alloc_type is not AllocType.DEVICE:
            raise OffloadError(ErrorCode.UNSUPPORTED, f"a remote device has no {alloc_type.name} memory (the host cannot reach it)")
        return self.place(self.rpc("olMemAlloc", device, AllocType.DEVICE, size), size)

    def mem_free(self, device: Device, address: int) -> None:
        self.rpc("olMemFree", self.server(address))
        self.table.pop(address)

    def data_submit(self, device: Device, dst: int, src: int, size: int, queue: Queue | None) -> None:
        data, target = ctypes.string_at(src, size), self.server(dst)  # read now: sent with the request
        self.run(queue, lambda: self.rpc("write", device, target, data))

    def data_retrieve(self, device: Device, dst: int, src: int, size: int, queue: Queue | None) -> None:
        source = self.server(src)
        self.run(queue, lambda: ctypes.memmove(dst, self.rpc("read", device, source, size), size) and None)

    def data_exchange(self, src_device: Device, src: int, dst_device: Device, dst: int, size: int, queue: Queue | None) -> None:
        source, target = self.server(src), self.server(dst)
        self.run(queue, lambda: self.rpc("olMemcpy", None, target, dst_device, source, src_device, size))

    def data_fill(self, device: Device, address: int, pattern: bytes, size: int, queue: Queue | None) -> None:
        target = self.server(address)
        self.run(queue, lambda: self.rpc("olMemFill", None, target, pattern, size))

    # --- queues and events ------------------------------------------------------------------

    def create_queue(self, device: Device) -> Queue:
        return Queue()

    def synchronize(self, device: Device, queue: Queue, release: bool) -> None:
        self.calls.synchronize(queue, release, Queue.wait, Queue.close)

    def has_pending_work(self, device: Device, queue: Queue) -> bool:
        return self.calls.has_pending_work(queue, Queue.pending)

    def enqueue_host_call(self, device: Device, queue: Queue, callback: Callable[[], None]) -> None:
        self.calls.enqueue(queue, callback)

    def create_event(self, device: Device, queue: Queue) -> Marker:
        return Marker(queue)

    def wait_event(self, device: Device, queue: Queue, event: Marker) -> None:
        queue.put(event.done.wait)

    def is_event_complete(self, device: Device, event: Marker) -> bool:
        return event.done.is_set()

    def sync_event(self, device: Device, event: Marker) -> None:
        event.done.wait()
        raise_kept_errors(event.errors, f"an operation on {event.queue.name}", f"operations on {event.queue.name}")

    def event_elapsed_time(self, device: Device, start: Marker, end: Marker) -> float:
        return (end.at - start.at) / 1e6

    # --- programs and launches --------------------------------------------------------------

    def is_valid_binary(self, device: Device, data: bytes) -> bool:
        return bool(self.rpc("olIsValidBinary", device, data))

    def load_binary(self, device: Device, data: bytes) -> list[int]:
        return [self.rpc("olCreateProgram", device, data)]  # [program, client addresses of its globals...]

    def unload_binary(self, device: Device, image: list[int]) -> None:
        self.rpc("unload", image[0])
        for address in image[1:]:
            self.table.pop(address, None)

    def get_kernel(self, device: Device, image: list[int], name: str) -> Kernel:
        symbol = self.rpc("olGetSymbol", image[0], name, SymbolKind.KERNEL)
        params = self.rpc("olGetKernelParamsExt", symbol)
        return symbol, params, [p.offset for p in params or () if p.kind == "pointer" and p.size == 8]

    def get_global(self, device: Device, image: list[int], name: str) -> tuple[int, int]:
        symbol = self.rpc("olGetSymbol", image[0], name, SymbolKind.GLOBAL_VARIABLE)
        server, size = (self.rpc("olGetSymbolInfo", symbol, info) for info in (_ADDRESS, _SIZE))
        image.append(self.place(server, size))
        return image[-1], size

    def symbol_names(self, device: Device, image: list[int], kind: SymbolKind) -> list[str]:
        return list(self.rpc("names", image[0], kind))

    def kernel_params(self, device: Device, kernel: Kernel) -> Any:
        return kernel[1]

    def _launch(self, device: Device, queue: Queue | None, kernel: Kernel, args: Any, launch: KernelLaunchSizeArgs, coop: bool) -> None:
        data = None if args is None else bytearray(memoryview(args).cast("B"))
        for offset in kernel[2] if data is not None else ():
            server = self.server(struct.unpack_from("<Q", data, offset)[0])
            if server is not None:  # a pointer into the device's memory: the server's address
                struct.pack_into("<Q", data, offset, server)
        sent = None if data is None else bytes(data)
        props = {KernelLaunchPropType.IS_COOPERATIVE: True} if coop else None
        self.run(queue, lambda: self.rpc("olLaunchKernel", None, device, kernel[0], sent, launch, props))

    def launch_kernel(self, device: Device, queue: Queue | None, kernel: Kernel, args: Any, launch: KernelLaunchSizeArgs) -> None:
        self._launch(device, queue, kernel, args, launch, False)

    def launch_kernel_cooperative(self, device: Device, queue: Queue | None, kernel: Kernel, args: Any, launch: KernelLaunchSizeArgs) -> None:
        self._launch(device, queue, kernel, args, launch, True)

    def max_cooperative_groups(self, device: Device, kernel: Kernel, launch: KernelLaunchSizeArgs) -> int:
        return int(self.rpc("olGetKernelMaxCooperativeGroupCount", device, kernel[0], launch))

    def max_group_size(self, device: Device, kernel: Kernel, dynamic_memory: int) -> int:
        return int(self.rpc("olCalculateOptimalOccupancy", device, kernel[0], dynamic_memory))
