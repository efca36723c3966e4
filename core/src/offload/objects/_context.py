"""Contexts (liboffload main) as objects: devices of one platform grouped as the owner of the
buffers, queues and programs made in them.

``Context(devices)`` (or ``platform.create_context()``) makes a new context; every platform also
has a default one (``platform.default_context``, ``device.default_context``), which objects made
without a context belong to and which lives as long as the session. A context is a factory:
``ctx.alloc(...)``, ``ctx.empty(...)``, ``ctx.to_device(...)``, ``ctx.queue(...)``,
``ctx.load_program(...)`` and ``ctx.build_program(...)`` make objects owned by it on one of its
devices (its first by default). Each such object keeps its context alive, and frees its handle
with it (``olMemFree(ptr, context)``). ``close()`` (or leaving a ``with`` block) destroys the
context: while it still owns a live buffer, queue or program, that is the flat API's
INVALID_CONTEXT naming what it owns; close them first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._api.build import build
from .._values.enums import AllocType, ContextInfo, ErrorCode
from .._values.errors import OffloadError
from .._api.flat import ContextHandle
from .._api.flat import olCreateContext, olDestroyContext, olGetContextInfo
from .._api.sessions import session_of
from . import _session
from ._discovery import Device, Platform, as_device
from ._makers import MAKERS

if TYPE_CHECKING:
    from os import PathLike

    from numpy.typing import DTypeLike

    from .._api.sessions import Session
    from ._array import Array
    from ._buffer import Buffer
    from ._program import Program
    from ._queue import Queue


def _destroy(ctx: Session, handle: ContextHandle, retry: bool = True) -> None:
    """Finalizer: destroy the context. Collected in one cycle with objects it owns, it may run
    first: it then tries once more after them (``_session.defer``); what it still owns after
    that (flat API allocations) is freed with it by the final ``olShutDown``."""
    if _session.is_current(ctx) and session_of(handle) is ctx:
        _session.drain()  # releases the collector queued (the context's own objects) go first
        try:
            olDestroyContext(handle)
        except OffloadError:
            if retry:
                _session.defer(_destroy, ctx, handle, False)


def _keep(ctx: Session, handle: ContextHandle) -> None:
    """The finalizer of a default context: nothing (it lives as long as its session)."""


class Context(_session.ClosedOnExit, _session.HandleOwner[ContextHandle]):
    """A context over ``devices`` (Devices or ``"platform:index"`` ids of one platform, or one of
    them): ``olCreateContext``; INVALID_DEVICE for devices of different platforms or drivers,
    INVALID_SIZE for none."""

    __slots__ = ("_handle", "_finalizer", "_devices", "_default", "__weakref__")

    def __init__(self, devices: Device | str | Sequence[Device | str]) -> None:
        if isinstance(devices, Device | str):
            devices = [devices]
        try:
            given = list(devices)
        except TypeError:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT, f"devices must be Devices or 'platform:index' ids, got {devices!r}"
            ) from None
        chosen = [as_device(d) for d in given]
        ctx = _session.acquire()
        handle = olCreateContext([d.handle for d in chosen])
        self._devices = tuple(dict.fromkeys(chosen))
        self._default = False
        self._own(handle, _destroy, ctx, handle)

    @classmethod
    def default_of(cls, platform: Platform) -> Context:
        """The platform's default context (one object per session; ``platform.default_context``)."""
        handle: ContextHandle = platform.handle.default_context

        def make() -> Context:
            self = object.__new__(cls)
            self._devices = tuple(platform.devices)
            self._default = True
            self._own(handle, _keep, None, handle)
            return self

        return _session.wrapper(handle, make)  # type: ignore[no-any-return]

    # --- description -------------------------------------------------------------------------

    @property
    def devices(self) -> list[Device]:
        """The context's devices, in the order given (``ContextInfo.DEVICES``)."""
        return list(self._devices)

    @property
    def platform(self) -> Platform:
        return self._devices[0].platform

    @property
    def is_default(self) -> bool:
        """Whether this is its platform's default context (never destroyed)."""
        return self._default

    def info(self, prop: ContextInfo) -> Any:
        """``olGetContextInfo`` of one property."""
        return olGetContextInfo(self._handle, prop)

    def device(self, device: Device | str | None = None) -> Device:
        """``device`` (None: the context's first device); one outside the context is refused by
        the flat API when an object is made on it (INVALID_DEVICE)."""
        return self._devices[0] if device is None else as_device(device)

    # --- factories ---------------------------------------------------------------------------

    def alloc(
        self, size: int, device: Device | str | None = None, kind: AllocType | str = AllocType.DEVICE,
        *, alignment: int | None = None,
    ) -> Buffer:
        """A new Buffer owned by this context (``kind="host"``: pinned host memory, olMemAllocHost;
        ``alignment``: olMemAllocAligned / olMemAllocAlignedHost)."""
        return MAKERS.buffer(size, self.device(device), kind, alignment=alignment, context=self)

    def empty(
        self, shape: int | tuple[int, ...], dtype: DTypeLike = "float32", device: Device | str | None = None,
        kind: AllocType | str = AllocType.DEVICE,
    ) -> Array:
        """A new uninitialised Array whose Buffer this context owns."""
        return MAKERS.empty(shape, dtype, self.device(device), kind, context=self)

    def to_device(
        self, source: Any, device: Device | str | None = None, kind: AllocType | str = AllocType.DEVICE,
        *, queue: Queue | None = None,
    ) -> Array:
        """A copy of ``source`` (numpy, anything ``numpy.asarray`` takes, an Array) owned by this context."""
        return MAKERS.to_device(source, self.device(device), kind, queue=queue, context=self)

    def queue(self, device: Device | str | None = None) -> Queue:
        """A new queue of ``device`` owned by this context."""
        return MAKERS.queue(self.device(device), context=self)

    def load_program(
        self, image: bytes | bytearray | memoryview | str | PathLike[str], device: Device | str | None = None
    ) -> Program:
        """Load a program image (bytes or a path) on ``device``, owned by this context."""
        return MAKERS.program(self.device(device), image, context=self)

    def build_program(self, source: str, device: Device | str | None = None, options: Sequence[str] = ()) -> Program:
        """Compile kernel ``source`` for ``device`` (``offload.build``) and load it in this context."""
        dev = self.device(device)
        return MAKERS.program(dev, build(source, dev.handle, options), context=self)

    # --- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Destroy the context (idempotent; one of an ended session just lets go). The flat API's
        INVALID_CONTEXT while it still owns a buffer, queue or program (its message says which),
        and for a default context, which lives as long as the session."""
        if self._default:
            olDestroyContext(self._handle)  # raises: a default context is never destroyed
        if not self._finalizer.alive:
            return
        if (owner := session_of(self._handle)) is None or not _session.is_current(owner):
            self._finalizer.detach()
            return
        _session.drain()  # objects of this context the collector already let go of are released first
        olDestroyContext(self._handle)
        self._finalizer.detach()

    def __repr__(self) -> str:
        kind = "default " if self._default else ""
        state = " (closed)" if self.closed else ""
        return f"<offload.objects.Context {kind}over {', '.join(d.id for d in self._devices)}{state}>"


def context_handle(context: Context | None) -> ContextHandle | None:
    """The flat handle to make an object in (None: the device's platform's default context);
    INVALID_CONTEXT naming what was given instead of a Context."""
    if context is None:
        return None
    if not isinstance(context, Context):
        raise OffloadError(ErrorCode.INVALID_CONTEXT, f"context must be an offload.objects.Context, got {context!r}")
    return context.handle


MAKERS.context = Context  # (for Platform.default_context and create_context: see _makers)
