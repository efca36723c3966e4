"""The object layer's records and verdicts: the Python side of the interface of
``offload.objects._compiled._replay`` (``_replay.h``, version ``VERSION``; "verdicts, not twins").

The copy and launch decisions are written once, here in Python (``_buffer.fast_copy``,
``Kernel._run`` and ``same_call``). Having decided, Python publishes a verdict on a record: a
``CopyVerdict`` on the copy's destination (``_copied``), a ``LaunchVerdict`` on the kernel
(``_memo``, ``_memo_previous``). Where the extension runs (``ACTIVE``: the compiled path on,
``_replay`` built, of this version), ``Buffer.copy_from``, ``Buffer.copy_to``, ``Array.copy_from``,
``Queue.copy``, ``Queue.launch`` and ``Kernel.launch`` are C methods (``Copier``, ``Relauncher``)
that replay a verdict for exactly the objects it was made for (identity) while ``STAMPS`` are
as they were when the decision began, and call the Python method for every other call.

The records are the base classes of Buffer and Array (``MemoryRecord``), Queue (``QueueRecord``)
and Kernel (``KernelRecord``): C types where ``ACTIVE``, else the Python classes below with the
same slot names (the layout only). ``STAMPS.close()`` kills every verdict: a Buffer's memory
went, the layer's session reference was dropped, the process forked. A copy verdict names the
records among its arguments by address and serial (each record's birth number, given in C), so
it keeps none alive and never takes a new object at a dead one's address for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._api.sessions import compiled_path_runs

VERSION = 1  # _replay.h's OFFLOAD_REPLAY_VERSION
MEMORY_FIELDS = ("_copied",)
QUEUE_FIELDS = ("_handle", "_inflight")
KERNEL_FIELDS = ("_memo", "_memo_previous")
STAMP_FIELDS = ("closes", "births")
LAUNCH_FIELDS = (
    "args", "grid", "block", "shared_memory", "closes", "launch", "device", "kernel", "data", "sizes",
    "first", "first_class", "second", "second_class", "owner",
)  # fmt: skip

try:
    import offload.objects._compiled._replay as _replay  # (by its full name: an extension module)
except ImportError:  # built without a compiler: the Python methods and records
    _replay = None  # type: ignore[assignment]


def _declared(module: Any) -> bool:
    """Whether the extension is this version and its records have the declared fields."""
    if module is None or getattr(module, "VERSION", None) != VERSION:
        return False
    fields = {"MemoryRecord": MEMORY_FIELDS, "QueueRecord": QUEUE_FIELDS, "KernelRecord": KERNEL_FIELDS}
    return all(set(names) <= set(vars(getattr(module, record))) for record, names in fields.items())


ACTIVE = compiled_path_runs and _declared(_replay)

# which copy method a verdict is of
BUFFER_COPY_FROM, BUFFER_COPY_TO, ARRAY_COPY_FROM, QUEUE_COPY = range(4)


class _PyMemoryRecord:
    __slots__ = MEMORY_FIELDS
    _copied: Any


class _PyQueueRecord:
    __slots__ = QUEUE_FIELDS
    _handle: Any
    _inflight: list[Any]


class _PyKernelRecord:
    __slots__ = KERNEL_FIELDS
    _memo: LaunchVerdict
    _memo_previous: LaunchVerdict


class _PyStamps:
    """``STAMPS`` without the extension: nothing replays, so only ``closes`` is read (by ``same_call``)."""

    __slots__ = STAMP_FIELDS

    def __init__(self) -> None:
        self.closes = 0
        self.births = 0

    def close(self) -> None:
        self.closes += 1


class _PyLaunchVerdict:
    """``LaunchVerdict`` without the extension (``_replay.h``: the same fields)."""

    __slots__ = LAUNCH_FIELDS

    def __init__(
        self, args: tuple[Any, ...], grid: Any, block: Any, shared_memory: Any, closes: int, launch: Any, device: Any,
        kernel: Any, data: Any, sizes: Any, first: int, first_class: Any, second: int, second_class: Any, owner: Any,
    ) -> None:  # fmt: skip
        self.args, self.grid, self.block, self.shared_memory, self.closes = args, grid, block, shared_memory, closes
        self.launch, self.device, self.kernel, self.data, self.sizes = launch, device, kernel, data, sizes
        self.first, self.first_class, self.second, self.second_class, self.owner = first, first_class, second, second_class, owner


if TYPE_CHECKING:
    MemoryRecord = _PyMemoryRecord
    QueueRecord = _PyQueueRecord
    KernelRecord = _PyKernelRecord
    LaunchVerdict = _PyLaunchVerdict
    STAMPS = _PyStamps()
elif ACTIVE:
    MemoryRecord, QueueRecord, KernelRecord = _replay.MemoryRecord, _replay.QueueRecord, _replay.KernelRecord
    LaunchVerdict, STAMPS = _replay.LaunchVerdict, _replay.STAMPS
else:
    MemoryRecord, QueueRecord, KernelRecord = _PyMemoryRecord, _PyQueueRecord, _PyKernelRecord
    LaunchVerdict, STAMPS = _PyLaunchVerdict, _PyStamps()

#: the address of a buffer export in C where the extension runs (``_hostbuf``); else None
buffer_address: Callable[[object], int] | None = _replay.buffer_address if ACTIVE else None


def _publish_nothing(destination: Any, kind: int, items: tuple[Any, ...], call: tuple[Any, ...], stamp: int) -> None:
    """Where the extension is not used, nothing replays a verdict: none is recorded."""


#: ``publish_copy(destination, kind, items, call, stamp)``: record on ``destination`` (a Buffer or
#: Array) that the copy method ``kind`` called with exactly ``items`` (self first, keywords in
#: declared order, defaults filled in) makes ``call`` (``call[0](*call[1:])``), decided while
#: ``STAMPS.closes`` was ``stamp`` (read before the decision began)
publish_copy: Callable[[Any, int, tuple[Any, ...], tuple[Any, ...], int], None] = (
    _replay.publish_copy if ACTIVE else _publish_nothing
)


F = TypeVar("F", bound=Callable[..., Any])


def _keywords(method: Callable[..., Any]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The keyword-only parameters of ``method`` (a function: each with a default) and their
    defaults, in declared order."""
    code = method.__code__
    names = tuple(code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount])
    defaults = method.__kwdefaults__ or {}
    return names, tuple(defaults[name] for name in names)


def copying(kind: int, positional: int, destination: int, source: int, queue: int) -> Callable[[F], F]:
    """A decorator: the copy method as a ``Copier`` of ``kind`` when ``ACTIVE`` (it replays the
    verdicts ``publish_copy`` recorded for ``kind``; ``positional`` arguments with self, then the
    keywords; ``destination``, ``source`` and ``queue`` index that line of arguments), else the
    method itself."""

    def wrap(method: F) -> F:
        if not ACTIVE:
            return method
        names, defaults = _keywords(method)
        copier: Any = _replay.Copier(method, kind, positional, names, defaults, destination, source, queue)
        return copier  # type: ignore[no-any-return]  # (called, named as the method)

    return wrap


def relaunching(queued: bool, miss: Callable[..., Any]) -> Callable[[F], F]:
    """A decorator: the launch method as a ``Relauncher`` when ``ACTIVE`` (``queued``:
    ``Queue.launch``'s arguments, else ``Kernel.launch``'s), else the method itself. A call of
    the method's shape that neither of the kernel's verdicts was made for goes where the method
    sends it, ``miss(kernel, queue handle, grid, block, shared_memory, args)`` (``Kernel._run``);
    any other call to the method."""

    def wrap(method: F) -> F:
        if not ACTIVE:
            return method
        names, defaults = _keywords(method)
        relauncher: Any = _replay.Relauncher(method, queued, names, defaults, names.index("shared_memory"), miss)
        return relauncher  # type: ignore[no-any-return]  # (called, named as the method)

    return wrap
