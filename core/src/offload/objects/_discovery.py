"""Platforms and devices as objects: readable names, every info property, a default device."""

from __future__ import annotations

import os
from contextvars import ContextVar
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from .._api.build import build
from .._api.flat import DeviceHandle
from .._api.flat import PlatformHandle
from .._api.flat import olGetDeviceInfo, olGetPlatformInfo
from .._values.enums import AllocType, DeviceInfo, DeviceType, ErrorCode, PlatformBackend, PlatformInfo
from .._values.errors import OffloadError, OffloadTypeError, OffloadValueError
from .._api.sessions import current_session, spread_over_ranks
from .._values.types import Dimensions
from . import _session
from ._makers import MAKERS
from ._names import as_backend, platform_named

if TYPE_CHECKING:
    from os import PathLike

    from ._buffer import Buffer
    from ._context import Context
    from ._program import Program
    from ._queue import Queue

DEFAULT_DEVICE_ENV = "OFFLOAD_DEVICE"
_SCOPE: ContextVar[tuple[Device, ...]] = ContextVar("offload_device_scope", default=())  # ``with device:`` blocks

E = TypeVar("E", PlatformInfo, DeviceInfo)
T = TypeVar("T")
_SKIPPED = (ErrorCode.UNIMPLEMENTED, ErrorCode.UNSUPPORTED)


class InfoMapping(Mapping[E, Any], Generic[E]):
    """Every property a platform or device reports, asked once (those it cannot tell are absent)."""

    __slots__ = ("_values",)

    def __init__(self, enum_type: type[E], query: Any, handle: Any) -> None:
        values: dict[E, Any] = {}
        for prop in enum_type:
            try:
                values[prop] = query(handle, prop)
            except OffloadError as error:
                if error.code not in _SKIPPED:
                    raise
        self._values: dict[E, Any] = values

    def __getitem__(self, prop: E) -> Any:
        return self._values[prop]

    def __iter__(self) -> Iterator[E]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{p.name}: {v!r}" for p, v in self._values.items()) + "}"


H = TypeVar("H", PlatformHandle, DeviceHandle)


class _Described(Generic[H, E]):
    """A flat handle with the info properties its backend reports (asked once, on first use)."""

    __slots__ = ("_handle", "_info")

    _INFO: tuple[type[E], Callable[[H, E], Any]]  # (the info enum, the flat query): each subclass's

    def __init__(self, handle: H) -> None:
        self._handle: H = handle
        self._info: InfoMapping[E] | None = None

    @property
    def handle(self) -> H:
        """The flat API's handle."""
        return self._handle

    @property
    def info(self) -> InfoMapping[E]:
        """Every property of the info enum (``PlatformInfo``, ``DeviceInfo``) the backend reports."""
        if self._info is None:
            self._info = InfoMapping(*self._INFO, self._handle)
        return self._info


class _Reported(Generic[T]):
    """A Device property read from ``info``: None when the backend does not report it."""

    __slots__ = ("_prop",)

    def __init__(self, prop: DeviceInfo) -> None:
        self._prop = prop

    @overload
    def __get__(self, device: None, owner: type[Any]) -> _Reported[T]: ...

    @overload
    def __get__(self, device: Device, owner: type[Any]) -> T | None: ...

    def __get__(self, device: Device | None, owner: type[Any]) -> _Reported[T] | T | None:
        return self if device is None else cast("T | None", device.info.get(self._prop))


class _Stated:
    """A Platform property every backend states, read from ``info`` as a str."""

    __slots__ = ("_prop",)

    def __init__(self, prop: PlatformInfo) -> None:
        self._prop = prop

    @overload
    def __get__(self, platform: None, owner: type[Any]) -> _Stated: ...

    @overload
    def __get__(self, platform: Platform, owner: type[Any]) -> str: ...

    def __get__(self, platform: Platform | None, owner: type[Any]) -> _Stated | str:
        return self if platform is None else str(platform.info[self._prop])


def _reported(kind: type[T], *props: str) -> tuple[_Reported[T], ...]:
    """Device properties of one type ``kind``, read from ``info`` by ``DeviceInfo`` member name."""
    return tuple(_Reported[T](DeviceInfo[prop]) for prop in props)


class Platform(_Described[PlatformHandle, PlatformInfo]):
    """One loaded backend (``ol_platform_handle_t``) and its devices."""

    __slots__ = ()

    _INFO = (PlatformInfo, olGetPlatformInfo)

    @property
    def name(self) -> str:
        """The platform name ("host", "cuda", "amdgpu", ...)."""
        return self._handle.name

    @property
    def backend(self) -> PlatformBackend:
        return self._handle.kind

    vendor_name = _Stated(PlatformInfo.VENDOR_NAME)
    version = _Stated(PlatformInfo.VERSION)

    @property
    def devices(self) -> list[Device]:
        return [_device(d) for d in self._handle.devices]

    @property
    def default_context(self) -> Context:
        """The context objects made without one belong to (every device of the platform; it lives
        as long as the session)."""
        return MAKERS.context.default_of(self)

    def create_context(self, devices: Sequence[Device | str] | None = None) -> Context:
        """A new context over ``devices`` (default: every device of this platform)."""
        return MAKERS.context(self.devices if devices is None else devices)

    def __repr__(self) -> str:
        return f"<offload.objects.Platform {self.name!r} ({len(self._handle.devices)} devices)>"


class Device(_Described[DeviceHandle, DeviceInfo]):
    """One device (``ol_device_handle_t``): its properties, and the factory of its objects."""

    __slots__ = ("__weakref__",)

    _INFO = (DeviceInfo, olGetDeviceInfo)

    @property
    def platform(self) -> Platform:
        return _platform(self._handle.platform)

    @property
    def index(self) -> int:
        """The device's position within its platform (its DLPack ``device_id``)."""
        return self._handle.index

    @property
    def id(self) -> str:
        """``"<platform>:<index>"``, as ``OFFLOAD_DEVICE`` and ``offload.devices`` spell it."""
        return f"{self._handle.platform.name}:{self._handle.index}"

    @property
    def is_host(self) -> bool:
        """Whether this is a device of the host platform (its memory is the process's memory)."""
        return self._handle.is_host

    @property
    def name(self) -> str:
        return str(self.info.get(DeviceInfo.NAME) or self.id)

    # the common properties (None when the backend does not report one); ``info`` has them all
    product_name, vendor, driver_version, uid = _reported(str, "PRODUCT_NAME", "VENDOR", "DRIVER_VERSION", "UID")
    max_work_group_size_per_dimension, = _reported(Dimensions, "MAX_WORK_GROUP_SIZE_PER_DIMENSION")
    type, = _reported(DeviceType, "TYPE")
    num_compute_units, max_work_group_size, max_clock_frequency, address_bits = _reported(
        int, "NUM_COMPUTE_UNITS", "MAX_WORK_GROUP_SIZE", "MAX_CLOCK_FREQUENCY", "ADDRESS_BITS"
    )
    global_mem_size, max_mem_alloc_size, work_group_local_mem_size = _reported(
        int, "GLOBAL_MEM_SIZE", "MAX_MEM_ALLOC_SIZE", "WORK_GROUP_LOCAL_MEM_SIZE"
    )

    # --- factories -------------------------------------------------------------------------

    @property
    def default_context(self) -> Context:
        """Its platform's default context (what its objects made without a context belong to)."""
        return self.platform.default_context

    def alloc(
        self, size: int, kind: AllocType | str = AllocType.DEVICE, *, alignment: int | None = None, queue: Queue | None = None
    ) -> Buffer:
        """A new ``Buffer`` of ``size`` bytes of ``kind`` memory on this device (``"host"``: pinned
        host memory; ``alignment``: an address that is a multiple of it; ``queue``: DEVICE memory
        allocated in that queue's order, ``buffer.close(queue)`` to free it so)."""
        return MAKERS.buffer(size, device=self, kind=kind, alignment=alignment, queue=queue)

    def queue(self) -> Queue:
        """A new queue on this device."""
        return MAKERS.queue(self)

    def load_program(self, image: bytes | bytearray | memoryview | str | PathLike[str]) -> Program:
        """Load a program image (bytes, or a path to a file holding it) on this device."""
        return MAKERS.program(self, image)

    def build_program(self, source: str, options: Sequence[str] = ()) -> Program:
        """Compile kernel ``source`` for this device (``offload.build``: its backend's toolchain,
        cached) and load it."""
        return MAKERS.program(self, build(source, self._handle, options))

    def __enter__(self) -> Device:
        """``with device:`` makes it the default device (``default_device()``, so of every object
        made without one) inside the block, for this thread or asyncio task only (contextvars)."""
        _SCOPE.set((*_SCOPE.get(), self))
        return self

    def __exit__(self, *exc: object) -> None:
        scope = _SCOPE.get()
        _SCOPE.set(scope[:-1] if scope and scope[-1] is self else tuple(d for d in scope if d is not self))

    def __repr__(self) -> str:
        return f"<offload.objects.Device {self.id} {self.name!r}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other._handle is self._handle

    def __hash__(self) -> int:
        return hash(self._handle)


def _platform(handle: PlatformHandle) -> Platform:
    return _session.wrapper(handle, lambda: Platform(handle))  # type: ignore[no-any-return]


def _device(handle: DeviceHandle) -> Device:
    return _session.wrapper(handle, lambda: Device(handle))  # type: ignore[no-any-return]


def as_device(device: Device | DeviceHandle | str | None) -> Device:
    """A ``Device`` from a Device, a flat handle, a ``"platform[:index]"`` id, or None (the default)."""
    if device is None:
        return default_device()
    if isinstance(device, Device):
        return device
    if isinstance(device, DeviceHandle):
        _session.acquire()
        return _device(device)
    if isinstance(device, str):
        return _by_id(device)
    raise OffloadTypeError(
        ErrorCode.INVALID_DEVICE, f"device must be an offload Device or 'platform:index', got {type(device).__name__} {device!r}"
    )


def _by_id(text: str) -> Device:
    """The device ``"platform[:index]"`` (INVALID_DEVICE naming the platforms, or the index, that is wrong)."""
    name, colon, index = text.partition(":")
    ctx = _session.acquire()
    platform = platform_named(ctx, name, f"no device {text!r}: ", ErrorCode.INVALID_DEVICE)
    if colon and not (index.isascii() and index.isdigit()):
        raise OffloadValueError(
            ErrorCode.INVALID_DEVICE, f"no device {text!r}: the index must be a non-negative integer, got {index!r}"
        )
    found = [d for d in ctx.devices if d.platform is platform]
    position = int(index or 0)
    if position >= len(found):
        raise OffloadValueError(
            ErrorCode.INVALID_DEVICE, f"no device {text!r} (platform {name!r} has {len(found)} devices)"
        )
    return _device(found[position])


def platforms() -> list[Platform]:
    """Every loaded platform (the host platform last)."""
    ctx = _session.acquire()
    return [_platform(p) for p in ctx.platforms]


def devices(platform: str | Platform | None = None, backend: PlatformBackend | str | None = None) -> list[Device]:
    """Every device, or those of one platform (by object, or by name: ``"host"``, ``"cuda"``; a name
    that differs only in case is the same platform) or backend (``PlatformBackend`` or its name, in
    any case). A platform name that no loaded platform has is INVALID_ARGUMENT naming the
    platforms there are; a platform with no devices gives ``[]``."""
    ctx = _session.acquire()
    chosen = list(ctx.devices)
    if platform is not None:
        if isinstance(platform, Platform):
            handle = platform.handle
        elif isinstance(platform, str):
            handle = platform_named(ctx, platform)
        else:
            raise OffloadTypeError(
                ErrorCode.INVALID_ARGUMENT, f"platform must be a name or Platform, got {type(platform).__name__} {platform!r}"
            )
        chosen = [d for d in chosen if d.platform is handle]
    if backend is not None:
        backend = as_backend(backend)
        chosen = [d for d in chosen if d.platform.kind == backend]
    return [_device(d) for d in chosen]


def default_device() -> Device:
    """The device this process should use when none is named.

    The device of the innermost ``with device:`` block of this thread (or task), else
    ``$OFFLOAD_DEVICE`` ("platform[:index]") if set; else a device of the preferred platform (the
    first accelerator platform, else the host): under a launcher, the one of this process's local
    rank (``OMPI_COMM_WORLD_LOCAL_RANK``, ``MPI_LOCALRANKID``, ``PMI_LOCAL_RANK``,
    ``SLURM_LOCALID``, ``LOCAL_RANK``, or Ray's assigned GPU; see ``offload._core.ranks``) modulo the
    platform's device count, otherwise its first device.
    """
    scope = _SCOPE.get()
    if scope:
        return scope[-1]
    wanted = os.environ.get(DEFAULT_DEVICE_ENV)
    if wanted:
        return _by_id(wanted)
    found = devices()
    if not found:
        raise OffloadError(ErrorCode.NOT_FOUND, "no offload device: no backend is loaded (see `offload backends`)")
    preferred = [d for d in found if d.handle.platform is found[0].handle.platform]
    chosen = spread_over_ranks(len(preferred), found[0].platform.name)
    return preferred[0] if chosen is None else preferred[chosen[0]]


_host: tuple[Any, Device] | None = None  # (session, its host device)


def host_device() -> Device:
    """The device that stands for host memory in copies (a device of the host platform)."""
    global _host
    cached = _host
    if cached is not None and cached[0] is current_session() is not None:
        return cached[1]
    found = devices(backend=PlatformBackend.HOST)
    if not found:
        raise OffloadError(
            ErrorCode.UNSUPPORTED, "copies with host memory need the host platform (install offload-host)"
        )
    _host = (current_session(), found[0])
    return found[0]
