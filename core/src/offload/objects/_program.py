"""Programs and kernels: load from bytes or a path (``with`` unloads); kernels pack their arguments."""

from __future__ import annotations

import operator
import os
import struct
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._api.flat import ProgramHandle
from .._api.flat import SymbolHandle
from .._api.flat import (
    olCalculateOptimalOccupancy,
    olCreateProgram,
    olDestroyProgram,
    olGetSymbol,
    olLaunchKernel,
)
from .._api.build import build
from .._values.enums import AllocType, ErrorCode, SymbolKind
from .._values.errors import OffloadError
from .._api.sessions import session_of
from .._values.types import KernelLaunchSizeArgs, KernelParam
from . import _session
from ._context import Context, context_handle
from ._discovery import Device, as_device
from ._buffer import Buffer
from ._records import STAMPS, KernelRecord, LaunchVerdict, relaunching
from ._memory import check_queue, wrong_type
from ._bysize import by_classes
from ._packing import Packer
from ._signature import Pointee, declared_signature, merged_params, reported_pointees
from ._params import kernel_params
from ._makers import MAKERS

if TYPE_CHECKING:
    from .._api.sessions import Session
    from ._queue import Queue

Signature = str | Sequence[Any]
Extent = int | Sequence[int]
_SIZES_CACHE_LIMIT = 256
_NEVER = object()  # no launch size asked yet
#: a Kernel's _memo before a launch that may be reused (its arguments equal no call's)
NO_MEMO = LaunchVerdict((_NEVER,), _NEVER, _NEVER, _NEVER, 0, None, None, None, None, None, 0, None, 0, None, None)


def _unload(ctx: Session, handle: ProgramHandle) -> None:
    if _session.is_current(ctx) and session_of(handle) is ctx:
        try:
            olDestroyProgram(handle)
        except OffloadError:
            pass  # destroyed through the flat API meanwhile


class Program(_session.Closing, _session.HandleOwner[ProgramHandle]):
    """A program image loaded on one device, owned by ``context`` (default: the platform's default
    context); unloaded by ``close()``, ``with`` or the GC.

    A kernel launched through the layer keeps its program alive until the launching queue is
    synchronised, so the GC never unloads code that a queue may still run. A global variable's
    Buffer keeps its program alive; ``close()`` refuses while a numpy view or DLPack export of a
    global lives, and makes the globals' Buffers closed.
    """

    __slots__ = ("_handle", "_finalizer", "_device", "_kernels", "_ctx", "_globals", "_context", "__weakref__")

    def __init__(
        self,
        device: Device | str | None,
        image: bytes | bytearray | memoryview | str | os.PathLike[str],
        *,
        context: Context | None = None,
    ) -> None:
        owner = context_handle(context)  # (a Context, or INVALID_CONTEXT)
        dev = as_device(device) if context is None else context.device(device)
        ctx = _session.acquire()
        data: bytes | bytearray | memoryview
        if isinstance(image, str | os.PathLike):
            try:
                with open(image, "rb") as f:
                    data = f.read()
            except OSError as error:
                raise OffloadError(ErrorCode.HOST_IO, f"cannot read program {os.fspath(image)!r}: {error}") from None
        else:
            data = image
        handle = olCreateProgram(dev.handle, data) if owner is None else olCreateProgram(dev.handle, data, context=owner)
        self._device = dev
        self._context = context
        self._kernels: dict[tuple[str, Any], Kernel] = {}
        self._ctx = ctx
        self._globals: weakref.WeakSet[Buffer] = weakref.WeakSet()
        self._own(handle, _unload, ctx, handle)

    @classmethod
    def from_source(
        cls, device: Device | str | None, source: str, options: Sequence[str] = (), *, context: Context | None = None
    ) -> Program:
        """Compile ``source`` for ``device`` with its backend's toolchain (``offload.build``) and load it."""
        dev = as_device(device) if context is None else context.device(device)
        return cls(dev, build(source, dev.handle, options), context=context)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def context(self) -> Context:
        """The context owning the program (the platform's default one for a program loaded without one)."""
        return self._device.platform.default_context if self._context is None else self._context

    def kernel(self, name: str, signature: Signature | None = None) -> Kernel:
        """The kernel ``name``; ``signature`` declares its parameters where the backend cannot report them.

        A declared signature that disagrees with the reported layout is an INVALID_ARGUMENT naming
        the first differing parameter.
        """
        if not (signature is None or isinstance(signature, str | Sequence)):
            raise wrong_type(
                f"kernel {name!r} signature", "C parameter declarations (a str) or a sequence of parameters", signature
            )
        key: tuple[str, Any] = (name, signature if signature is None or isinstance(signature, str) else tuple(signature))
        try:
            found = self._kernels.get(key)
        except TypeError:  # an unhashable item in the signature
            found, key = None, (name, id(signature))
        if found is None:
            found = self._kernels[key] = Kernel(self, name, signature)
        return found

    def global_variable(self, name: str) -> Buffer:
        """The global variable ``name`` as a Buffer that does not own its memory (closed with the program)."""
        if self.closed:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{self!r}: global variable {name!r} of a closed program")
        symbol = olGetSymbol(self._handle, name, SymbolKind.GLOBAL_VARIABLE)
        buffer = Buffer.wrap(symbol.address, symbol.size, self._device, AllocType.DEVICE, owner=self, session=self._ctx)
        self._globals.add(buffer)
        return buffer

    def close(self) -> None:
        """Unload the program now (idempotent); OffloadError while a global's memory is exported."""
        views = list(self._globals)
        if self._finalizer.alive:
            for buffer in views:
                if live := buffer.exports:
                    raise OffloadError(
                        ErrorCode.INVALID_ARGUMENT,
                        f"cannot close {self!r}: {live} DLPack export(s) or numpy view(s) of its global {buffer!r} are alive",
                    )
        for buffer in views:
            buffer.invalidate()
        self._kernels.clear()
        self._finalizer()
        _session.drain()

    def __repr__(self) -> str:
        state = " (closed)" if self.closed else ""
        return f"<offload.objects.Program {len(self._handle.data)} bytes on {self._device.id}{state}>"


def _extent(value: Extent, what: str) -> tuple[int, ...]:
    try:
        if isinstance(value, Sequence):
            dims = tuple(operator.index(v) for v in value)
        else:
            dims = (operator.index(value),)
    except TypeError:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what} must be an int or 1-3 ints, got {value!r}") from None
    if not 1 <= len(dims) <= 3:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what} must have 1-3 extents, got {value!r}")
    return dims


def launch_size(grid: Extent, block: Extent, shared_memory: int) -> KernelLaunchSizeArgs:
    """``KernelLaunchSizeArgs`` from 1-3 dimensional grid (in groups) and block (items per group)."""
    groups, items = _extent(grid, "grid"), _extent(block, "block")
    dims = max(len(groups), len(items))
    g = (groups + (1, 1))[:3]
    b = (items + (1, 1))[:3]
    try:
        shared = operator.index(shared_memory)
    except TypeError:
        raise OffloadError(ErrorCode.INVALID_SIZE, f"shared_memory must be an int, got {shared_memory!r}") from None
    return KernelLaunchSizeArgs(dims, g, b, shared)  # type: ignore[arg-type]


class Kernel(KernelRecord):
    """A kernel of a ``Program``, with its parameter layout and a cached argument packer."""

    __slots__ = (
        "_handle", "_program", "_packer", "_launcher", "_sizes", "_device_handle",
        "_last_shape", "_memo_positions", "__weakref__",
    )

    #: ``_memo`` (the record's): the last launch whose arguments may be reused, a ``LaunchVerdict``
    #: replaced whole (threads launching at once never mix two launches), or ``NO_MEMO``.
    #: ``Queue.launch`` and ``launch`` reuse it when ``same_call`` (the decision, made here once):
    #: ``memo.args == args`` (Buffers and Arrays compare by identity, the scalars' classes are
    #: checked: equal values of one class pack alike), grid, block and shared memory are the same
    #: objects and no Buffer was closed since (``STAMPS.closes``: an address may be reused); the C
    #: methods replay it only for the very argument objects it was made with. A queue holds the
    #: verdict itself until its sync: it keeps the arguments and the kernel alive.
    #: ``_memo_previous`` is the one before (two sets of buffers used in turn are both reused).

    def __init__(self, program: Program, name: str, signature: Signature | None = None) -> None:
        self._handle = olGetSymbol(program.handle, name, SymbolKind.KERNEL)
        self._program = program
        self._device_handle = program.device.handle
        self._sizes: dict[Any, KernelLaunchSizeArgs] = {}
        # (grid, block, shared_memory, answer) of the last launch_size: one tuple, replaced whole,
        # so that threads launching at once never see one launch's grid with another's answer
        self._last_shape: tuple[Any, Any, Any, KernelLaunchSizeArgs] = (_NEVER, _NEVER, _NEVER, launch_size(1, 1, 0))
        reported = kernel_params(self._handle)
        pointees: tuple[Pointee | None, ...] = ()
        declared = None
        if signature is not None:
            declared, pointees = declared_signature(signature, f"kernel {name!r} signature")
        params = reported if declared is None else declared
        if reported is not None and declared is not None:
            params = merged_params(name, reported, declared)
        if reported is not None:  # element types the backend knows (its metadata, a host header)
            pointees = reported_pointees(name, reported, pointees)
        self._packer = None if params is None else Packer(name, params, pointees, self._device_handle)
        packer = self._packer if self._packer is not None else Packer(name, ())
        if params is not None and any(p.kind == "bytes" for p in params):  # sizes only: by the arguments' classes
            self._launcher, self._memo_positions = by_classes(name, params, pointees, self._device_handle, self._handle)
        else:
            self._launcher = packer.compile_launcher(self._device_handle, self._handle)
            self._memo_positions = packer.memo_positions() if self._packer is not None else None
        self._memo = NO_MEMO
        self._memo_previous = NO_MEMO

    @property
    def handle(self) -> SymbolHandle:
        return self._handle

    @property
    def name(self) -> str:
        return self._handle.name

    @property
    def program(self) -> Program:
        return self._program

    @property
    def params(self) -> tuple[KernelParam, ...] | None:
        """The parameter layout used for packing (None: unknown, so launches take no arguments)."""
        return None if self._packer is None else self._packer.params

    def pack(self, *args: Any) -> bytes | None:
        """The packed argument buffer for ``args``, as ``olLaunchKernel`` takes it."""
        packer = self._packer
        if packer is None:
            if args:
                raise OffloadError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"kernel {self.name!r}: its backend does not report its parameters; declare them as the "
                    f"kernel's argument struct lays them out, with program.kernel({self.name!r}, signature=...) "
                    "(C declarations, 'float a, const float *x, uint64_t n')",
                )
            return None
        try:
            return packer.fast_pack(args)
        except (ValueError, struct.error, OverflowError):  # a count or range mismatch
            return packer.pack(args)  # raises the error naming the parameter

    def launch_size(self, grid: Extent, block: Extent, shared_memory: int = 0) -> KernelLaunchSizeArgs:
        """The (cached) ``KernelLaunchSizeArgs`` of a grid and block."""
        try:
            key = (grid, block, shared_memory)
            found = self._sizes.get(key)
        except TypeError:  # lists: not hashable (and mutable), never cached
            return launch_size(grid, block, shared_memory)
        if found is None:
            found = launch_size(grid, block, shared_memory)
            if len(self._sizes) >= _SIZES_CACHE_LIMIT:
                self._sizes.clear()
            self._sizes[key] = found
        self._last_shape = (grid, block, shared_memory, found)
        return found

    def max_group_size(self, shared_memory: int = 0) -> int:
        """``olCalculateOptimalOccupancy``: the group size for best occupancy."""
        return olCalculateOptimalOccupancy(self._device_handle, self._handle, shared_memory)

    def _run(self, queue: Any, grid: Extent, block: Extent, shared_memory: int, args: tuple[Any, ...]) -> Any:
        """A launch on the flat ``queue`` handle (None: synchronously) that ``_memo`` did not
        match: the launch before it (``_memo_previous``: buffers used in turn) is reused when it
        matches, else the arguments are packed (errors name the parameter, ``Packer.pack``) and the
        call remembered (a ``LaunchVerdict``) when it may be reused. Returns what a queue holds
        until its sync."""
        previous = self._memo_previous
        if same_call(previous, args, grid, block, shared_memory):
            self._memo_previous, self._memo = self._memo, previous
            previous.launch(queue, previous.device, previous.kernel, previous.data, previous.sizes)
            return previous
        last = self._last_shape
        if grid is last[0] and block is last[1] and shared_memory is last[2]:
            sizes = last[3]  # the same launch shape as last time (literals are the same objects)
        else:
            sizes = self.launch_size(grid, block, shared_memory)
        closes = STAMPS.closes  # (before packing: a Buffer closed meanwhile kills the verdict)
        try:
            data = self._launcher(queue, args, sizes)
        except (ValueError, struct.error, OverflowError):  # a count or range mismatch: nothing was launched
            olLaunchKernel(queue, self._device_handle, self._handle, self.pack(*args), sizes)  # names the parameter
            return (self, args)
        positions = self._memo_positions
        last = self._last_shape  # set by launch_size only for a grid and block it may keep (hashable, not lists)
        kept = last[0] is grid and last[1] is block and last[2] is shared_memory
        if data is None or positions is None or not kept:
            return (self, args)
        first, second = positions
        memo = LaunchVerdict(
            args, grid, block, shared_memory, closes, olLaunchKernel, self._device_handle, self._handle, data, sizes,
            first, args[first].__class__, second, args[second].__class__, self,
        )
        self._memo_previous, self._memo = self._memo, memo
        return memo

    @relaunching(queued=False, miss=_run)  # (its verdicts, the remembered launches, replayed in C: _records)
    def launch(
        self, grid: Extent, block: Extent, *args: Any, shared_memory: int = 0, queue: Queue | None = None
    ) -> None:
        """Launch and wait (no ``queue``), or enqueue on ``queue``."""
        if queue is not None:
            check_queue(queue)
            queue.launch(self, grid, block, *args, shared_memory=shared_memory)
            return
        m = self._memo  # the last launch (see _memo)
        if same_call(m, args, grid, block, shared_memory):
            m.launch(None, m.device, m.kernel, m.data, m.sizes)
        else:
            self._run(None, grid, block, shared_memory, args)

    def __repr__(self) -> str:
        return f"<offload.Kernel {self.name!r} on {self._program.device.id}>"


def same_call(m: LaunchVerdict, args: tuple[Any, ...], grid: Extent, block: Extent, shared_memory: int) -> bool:
    """The launch decision: whether a launch with these arguments may reuse the remembered launch
    ``m`` (``Kernel._memo``): equal arguments of the same classes, the same extents, no Buffer
    closed since."""
    try:
        return bool(
            m.args == args and args[m.first].__class__ is m.first_class and args[m.second].__class__ is m.second_class
            and grid is m.grid and block is m.block and shared_memory is m.shared_memory and m.closes == STAMPS.closes
        )
    except Exception:  # an argument's own __eq__ failed (a numpy array): not the same call
        return False


MAKERS.program = Program  # (for Device.load_program and Context.load_program: see _makers)
