"""Value types of the API: ``Address``, ``Dimensions``, ``KernelLaunchSizeArgs``, ``KernelParam``, and ``HostCopy`` (what a queued host copy hands a backend)."""

from __future__ import annotations

import operator
from ctypes import memmove as _memmove
from typing import Any, NamedTuple, Protocol, SupportsIndex, TypeAlias

from .enums import ErrorCode
from .errors import OffloadError

_U32_MAX = 0xFFFFFFFF
_U64_LIMIT = 1 << 64


def _integer(value: Any) -> Any:
    """``value`` as an int when it is an integer of another type (``__index__``), else unchanged."""
    if type(value) is int or isinstance(value, bool):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def buffer_size(value: object) -> int:
    """The size in bytes of a bytes-like object, -1 for anything else."""
    try:
        return memoryview(value).nbytes  # type: ignore[arg-type]
    except TypeError:
        return -1


class HasOffloadPtr(Protocol):
    """An object that stands for memory: ``__offload_ptr__`` is its address (a Buffer, an Array)."""

    @property
    def __offload_ptr__(self) -> int: ...


Address: TypeAlias = SupportsIndex | HasOffloadPtr  # what an ol* function takes for a pointer


class Dimensions(NamedTuple):
    """``ol_dimensions_t``: three uint32 extents."""

    x: int = 1
    y: int = 1
    z: int = 1


def _dimensions(value: Dimensions | tuple[int, int, int], what: str) -> Dimensions:
    if type(value) is not Dimensions:
        try:
            x, y, z = value
        except (TypeError, ValueError):
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT, f"{what} must be Dimensions or a 3-tuple, got {value!r}"
            ) from None
        value = Dimensions(x, y, z)
    if type(value.x) is not int or type(value.y) is not int or type(value.z) is not int:
        value = Dimensions(*map(_integer, value))
    for axis, extent in zip("xyz", value):
        if type(extent) is not int:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what}.{axis} must be an int, got {extent!r}")
        if not 0 <= extent <= _U32_MAX:
            raise OffloadError(ErrorCode.INVALID_SIZE, f"{what}.{axis} = {extent} is not a uint32")
    return value


class KernelLaunchSizeArgs:
    """``ol_kernel_launch_size_args_t``: the grid of a launch.

    ``num_groups`` and ``group_size`` accept ``Dimensions`` or 3-tuples (of ints or ``__index__``
    integers). Construction checks the types; a zero extent, and a grid of 2**64 groups or more,
    are reported by ``olLaunchKernel`` as ``OL_ERRC_INVALID_SIZE``. It is immutable.
    """

    __slots__ = (
        "dimensions", "num_groups", "group_size", "dyn_shared_memory", "zero_extent", "group_items", "total_groups",
        "checked_for",
    )

    dimensions: int
    num_groups: Dimensions
    group_size: Dimensions
    dyn_shared_memory: int
    zero_extent: str | None  # the first zero extent ("NumGroups.y"), None when every extent > 0
    group_items: int  # work-items per group
    total_groups: int  # groups in the grid (may exceed 2**64: refused at launch)
    checked_for: Any  # the device limits this launch was last found within (olLaunchKernel's cache)

    def __init__(
        self,
        dimensions: int,
        num_groups: Dimensions | tuple[int, int, int],
        group_size: Dimensions | tuple[int, int, int],
        dyn_shared_memory: int = 0,
    ) -> None:
        dimensions, dyn_shared_memory = _integer(dimensions), _integer(dyn_shared_memory)
        if type(dimensions) is not int or not 1 <= dimensions <= 3:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"Dimensions must be 1, 2 or 3, got {dimensions!r}")
        if type(dyn_shared_memory) is not int or dyn_shared_memory < 0:
            raise OffloadError(
                ErrorCode.INVALID_SIZE, f"DynSharedMemory must be a non-negative int, got {dyn_shared_memory!r}"
            )
        num_groups, group_size = _dimensions(num_groups, "NumGroups"), _dimensions(group_size, "GroupSize")
        zero_extent = next(
            (
                f"{name}.{axis}"
                for name, dims in (("NumGroups", num_groups), ("GroupSize", group_size))
                for axis, extent in zip("xyz", dims)
                if extent == 0
            ),
            None,
        )
        _set = object.__setattr__  # immutable past this point (see __setattr__)
        _set(self, "dimensions", dimensions)
        _set(self, "num_groups", num_groups)
        _set(self, "group_size", group_size)
        _set(self, "dyn_shared_memory", dyn_shared_memory)
        _set(self, "zero_extent", zero_extent)
        _set(self, "group_items", group_size.x * group_size.y * group_size.z)
        _set(self, "total_groups", num_groups.x * num_groups.y * num_groups.z)
        _set(self, "checked_for", None)

    def __setattr__(self, name: str, value: Any) -> None:
        """Refused: a launch found within a device's limits stays within them, so the checks are
        made once per launch object (olLaunchKernel and backends rely on that)."""
        raise AttributeError(f"KernelLaunchSizeArgs is immutable: make a new one instead of setting {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"KernelLaunchSizeArgs is immutable: cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its four fields (``multiprocessing``, a device in another process)."""
        return (KernelLaunchSizeArgs, (self.dimensions, tuple(self.num_groups), tuple(self.group_size), self.dyn_shared_memory))

    def __repr__(self) -> str:
        return (
            f"KernelLaunchSizeArgs(dimensions={self.dimensions}, num_groups={tuple(self.num_groups)}, "
            f"group_size={tuple(self.group_size)}, dyn_shared_memory={self.dyn_shared_memory})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelLaunchSizeArgs):
            return NotImplemented
        return (self.dimensions, self.num_groups, self.group_size, self.dyn_shared_memory) == (
            other.dimensions,
            other.num_groups,
            other.group_size,
            other.dyn_shared_memory,
        )

    __hash__ = None  # type: ignore[assignment]


class KernelParam(NamedTuple):
    """One explicit parameter of a kernel, as it lies in the packed argument buffer.

    ``offset`` and ``size`` are in bytes. ``kind`` is what the bytes hold when the backend knows
    it: ``"pointer"`` (a device address), ``"int"`` / ``"uint"`` / ``"float"`` (a scalar of
    ``size`` bytes), or ``"bytes"`` (an aggregate, or not known). ``name`` may be empty.
    For a pointer, ``element`` is the numpy name of what it points to where the backend knows it
    (``"float32"``, ``"int64"``, ``"bool"``; None: untyped or unknown), and ``const`` whether the
    kernel only reads through it: the object layer then refuses an Array of another dtype, and
    passes read-only memory only to a ``const`` pointer.
    """

    offset: int
    size: int
    kind: str = "bytes"
    name: str = ""
    element: str | None = None
    const: bool = False


class InitArgs(NamedTuple):
    """``ol_init_args_t`` (main), given to ``olInit``: which platforms to bring up and the API level.

    ``platforms``: ``PlatformBackend`` values or backend names (None: every one); the host
    platform is always brought up, as liboffload does. ``api_level``: ``"r1"`` (liboffload R1:
    its numbering, trace spelling and semantics; the default) or ``"main"`` (its main branch:
    ``OL_ERRC_INVALID_CONTEXT`` is 24, HOST allocations only through ``olMemAllocHost``, elapsed
    time only between events created with ``EventFlags.ENABLE_PROFILING``, contexts in traces).
    Both are read by the ``olInit`` that starts a session; later ones only count references.
    """

    platforms: tuple[Any, ...] | None = None
    api_level: str = "r1"


class Rect(NamedTuple):
    """One side of an ``olMemcpyRect``: a base pointer, its device, the byte offset of the copied
    region's first element (x in bytes, y in rows, z in slices) and the pitches: ``row_pitch``
    bytes between rows, ``slice_pitch`` bytes between slices."""

    ptr: Any
    device: Any
    offset: tuple[int, int, int]
    row_pitch: int
    slice_pitch: int


class HostCopy:
    """A host-to-host copy the core enqueues with ``enqueue_host_call`` (a queued ``olMemcpy``
    between host memory): calling it is one ``memmove(dst, src, size)`` of ranges the core has
    checked. A backend may recognise it (``type(callback) is HostCopy``) and make the copy itself
    in queue order, without calling back into Python."""

    __slots__ = ("dst", "src", "size")
    dst: int
    src: int
    size: int

    def __init__(self, dst: int, src: int, size: int) -> None:
        self.dst, self.src, self.size = dst, src, size

    def __call__(self) -> None:
        _memmove(self.dst, self.src, self.size)

    def __repr__(self) -> str:
        return f"HostCopy(dst={self.dst:#x}, src={self.src:#x}, size={self.size})"
