"""Handle objects: made only by the API, checked for liveness by every call that takes one.

A handle is live while ``_ctx`` is the current session (``session.STATE.ctx``): destroying it, or the final
``olShutDown``, sets ``_ctx`` to None, so a stale handle (destroyed, from an earlier ``olInit``, or
of the wrong kind) is rejected by the core before anything reaches a backend.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .._compiled.interface import FIELDS
from .._values.enums import DeviceInfo, PlatformBackend, SymbolKind
from .._values.errors import OffloadError

if TYPE_CHECKING:
    from .mempool import DevicePool
    from .bound import BoundBackend
    from .._values.types import KernelParam
    from ..hookspecs import NativeDevice, NativeEvent, NativeKernel, NativeProgram, NativeQueue


# The classes below declare the fields the compiled path reads (``_compiled.interface.FIELDS``) first.


class _Handle:
    __slots__ = (*FIELDS["handle"], "__weakref__")
    _ctx: object | None  # the session (``runtime.Context``) it belongs to: only its identity matters here

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(f"{type(self).__name__}s are made only by the offload API")

    @classmethod
    def _make(cls, ctx: object, **fields: Any) -> Any:
        handle = object.__new__(cls)
        handle._ctx = ctx
        for name, value in fields.items():
            object.__setattr__(handle, name, value)
        return handle

    def _describe(self) -> str:
        return ""

    def __repr__(self) -> str:
        state = "" if self._ctx is not None else " (dead)"
        return f"<offload.{type(self).__name__} {self._describe()}{state} at {id(self):#x}>"


class PlatformHandle(_Handle):
    """``ol_platform_handle_t``: one loaded backend."""

    __slots__ = ("backend", "name", "kind", "devices", "default_context")
    backend: BoundBackend
    name: str
    kind: PlatformBackend
    devices: list[Device]
    default_context: Context  # every device of the platform: what calls without a context use

    def _describe(self) -> str:
        return self.name


class DeviceHandle(_Handle):
    """``ol_device_handle_t``."""

    __slots__ = (
        *FIELDS["device"], "platform", "index", "info", "info_cache", "is_host", "lock", "parked", "queues", "programs",
        "limits", "registered", "fault", "adopted", "pool",
    )
    backend: BoundBackend
    native: NativeDevice
    platform: Platform
    index: int
    info: dict[DeviceInfo, Any]  # the backend's answers, asked once at olInit
    info_cache: dict[Any, tuple[Any, Any]]  # converted (value, kind) per property asked
    is_host: bool
    lock: threading.Lock  # guards parked, queues, programs and registered
    parked: list[NativeQueue]  # native queues destroyed while busy, kept for reuse (newest last)
    queues: set[Queue]  # live queue handles
    adopted: set[int]  # id() of the native queues over another library's stream (adopt_stream): never reused
    pool: DevicePool  # blocks freed by olMemFreeAsync, kept per queue, and for a backend without mem_alloc_async (_core.mempool)
    programs: set[Program]  # live program handles
    limits: tuple[Any, ...]  # launch limits from the device info (see runtime.launch_limits)
    registered: dict[int, list[Any]]  # olMemRegister ranges: base -> [size, users, locked]; under lock
    entry_points: Any  # the backend's native_entry_points capsule for it (None: the Python hooks)
    word: int | None  # its native_word (None: none); see _native_entry
    fault: OffloadError | None  # the backend reported it faulted for good (_values.faults): its memory is refused

    def _describe(self) -> str:
        return f"{self.platform.name}:{self.index}"


class ContextHandle(_Handle):
    """``ol_context_handle_t`` (main): devices of one platform grouped as the owner of allocations,
    queues and programs (each records its context; what a context owns is found from them when
    it is destroyed). Each platform has a default one (``default``), which calls made without a
    context use and which cannot be destroyed."""

    __slots__ = ("platform", "devices", "default", "lock")
    platform: Platform
    devices: tuple[Device, ...]
    default: bool
    lock: threading.Lock  # serialises olDestroyContext

    def _describe(self) -> str:
        kind = "default " if self.default else ""
        return f"{kind}on {self.platform.name} ({len(self.devices)} device(s))"


class QueueHandle(_Handle):
    """``ol_queue_handle_t``."""

    __slots__ = (*FIELDS["queue"], "id", "context")
    device: Device
    native: NativeQueue
    id: int
    context: Context
    word: int | None  # the native queue's native_word (None: none); see _native_entry

    def _describe(self) -> str:
        return f"#{self.id} on {self.device._describe()}"


class EventHandle(_Handle):
    """``ol_event_handle_t``; it outlives its queue."""

    __slots__ = ("device", "native", "queue", "queue_id", "profiling")
    device: Device
    native: NativeEvent
    queue: Queue
    queue_id: int
    profiling: bool  # created with EventFlags.ENABLE_PROFILING

    def _describe(self) -> str:
        return f"of queue #{self.queue_id}"


class ProgramHandle(_Handle):
    """``ol_program_handle_t``: one image loaded on one device."""

    __slots__ = ("device", "image", "data", "symbols", "lock", "context")
    device: Device
    context: Context
    image: NativeProgram
    data: bytes  # the core's private copy of the binary
    symbols: dict[tuple[SymbolKind, str], Symbol]
    lock: threading.Lock

    def _describe(self) -> str:
        return f"{len(self.data)} bytes on {self.device._describe()}"


class SymbolHandle(_Handle):
    """``ol_symbol_handle_t``: a kernel or global variable, owned by its program."""

    __slots__ = (*FIELDS["symbol"], "program", "kind", "name", "address", "size", "params", "args_size", "launch_device")
    program: Program
    kind: SymbolKind
    name: str
    native: NativeKernel | None  # the backend's kernel object (kernels only)
    address: int  # global variables only
    size: int  # global variables only
    params: tuple[KernelParam, ...] | None  # kernels: their KernelParams (None: the backend cannot tell)
    args_size: int | None  # kernels: the end of the last parameter (None: unknown, not checked)
    launch_device: Device | None  # kernels: the device they launch on; None for global variables
    word: int | None  # kernels: their native_word (None: none); see _native_entry

    def _describe(self) -> str:
        return f"{self.kind.name.lower()} {self.name!r}"


HANDLE_TYPES = (PlatformHandle, DeviceHandle, ContextHandle, QueueHandle, EventHandle, ProgramHandle, SymbolHandle)

# The core's own short names for them (the object layer's offload.objects.Device, Queue, ... are
# other classes, which wrap these); offload.Device, .Queue, ... are deprecated spellings.
Platform = PlatformHandle
Device = DeviceHandle
Context = ContextHandle
Queue = QueueHandle
Event = EventHandle
Program = ProgramHandle
Symbol = SymbolHandle
