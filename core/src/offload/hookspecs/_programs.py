"""The contract's program hooks: images, their kernels and globals, launches, and programs built
from source (``offload.build``) (``offload.hookspecs`` re-exports them)."""

from __future__ import annotations

from collections.abc import Sequence

from .._values.enums import SymbolKind
from .._values.opaque import NativeDevice, NativeKernel, NativeProgram, NativeQueue
from .._values.types import KernelLaunchSizeArgs, KernelParam
from ._markers import hookspec


# --- programs and symbols ------------------------------------------------------------------


@hookspec
def is_valid_binary(device: NativeDevice, data: bytes) -> bool:
    """Whether ``data`` could be loaded on ``device``: a check of the image's format (headers, the
    target) where that decides it, else as much of the loading as answers it (a source format
    compiled without keeping the result). Default: False."""


@hookspec
def load_binary(device: NativeDevice, data: bytes) -> NativeProgram:
    """Load a program image and return an opaque ``image``.

    ``data`` is the core's private copy; the backend may keep it. Raise ``INVALID_BINARY`` for
    anything that is not a loadable image for this device (a source that does not compile
    included, with the compiler's log). Global constructors, where the format has them, run here.
    """


@hookspec
def unload_binary(device: NativeDevice, image: NativeProgram) -> None:
    """Unload one image loaded by ``load_binary`` (global destructors run here)."""


@hookspec
def get_kernel(device: NativeDevice, image: NativeProgram, name: str) -> NativeKernel:
    """Return an opaque ``kernel`` for the kernel ``name`` in ``image``; ``NOT_FOUND`` if absent."""


@hookspec
def get_global(device: NativeDevice, image: NativeProgram, name: str) -> tuple[int, int]:
    """Return ``(address, size)`` of the global variable ``name`` in ``image``; ``NOT_FOUND`` if absent."""


@hookspec
def kernel_params(device: NativeDevice, kernel: NativeKernel) -> Sequence[KernelParam] | None:
    """The explicit parameters of ``kernel`` in order, as laid out in the packed argument buffer
    (``KernelParam`` items or ``(offset, size[, kind, name])`` tuples), asked once per kernel symbol.

    The core refuses a launch whose buffer ends before the last parameter (``INVALID_ARGUMENT``,
    naming both sizes), and ``args=None`` for a kernel with parameters; a longer buffer (a C struct
    with tail padding) is accepted, and a driver is given exactly the parameters' extent,
    ``offload.backend.support.launch_extent(params)``. Return ``None`` only when the image does not
    say (the core cannot check; the backend documents its rule). A driver that needs the types to
    launch (OpenCL) always answers, from the kernel's metadata (``clGetKernelArgInfo``), laid out as
    a C compiler lays out their struct, leaving out parameters the struct does not carry (OpenCL's
    dynamic ``local`` pointer). A backend with ``launch_kernel`` implements this too; absent, the
    answer is ``None``.
    """


@hookspec
def max_group_size(device: NativeDevice, kernel: NativeKernel, dynamic_memory: int) -> int:
    """The work-group size giving optimal occupancy with ``dynamic_memory`` bytes of local memory."""


@hookspec
def launch_kernel(
    device: NativeDevice,
    queue: NativeQueue | None,
    kernel: NativeKernel,
    args: bytes | bytearray | memoryview | None,
    launch: KernelLaunchSizeArgs,
) -> None:
    """Launch ``kernel`` over ``launch``'s grid with the packed argument struct ``args``.

    ``queue`` None: a synchronous launch, finished when the hook returns. ``args`` is None (no
    arguments) or bytes-like (``bytes``, ``bytearray``, ``memoryview`` or a ctypes structure: read
    it through ``memoryview``), laid out as ``kernel_params`` says, which the caller may reuse once
    this returns (copy it, or hand its parts to the driver, when the launch is enqueued); a driver
    taking arguments one by one (OpenCL's ``clSetKernelArg``) unpacks it by them. ``launch`` is
    immutable and within the device's limits: every extent at least 1, the group size, the grid's
    and each dimension's work-items at most MAX_WORK_GROUP_SIZE(_PER_DIMENSION) and
    MAX_WORK_SIZE(_PER_DIMENSION). A backend may cache what it derives from a launch object by its
    identity while it holds a reference to it.
    """


@hookspec
def launch_kernel_cooperative(
    device: NativeDevice, queue: NativeQueue | None, kernel: NativeKernel, args: bytes | None, launch: KernelLaunchSizeArgs
) -> None:
    """``launch_kernel`` with every group resident at once, so that a grid-wide barrier in the
    kernel synchronises all groups. The core has checked the grid against ``max_cooperative_groups``."""


@hookspec
def max_cooperative_groups(device: NativeDevice, kernel: NativeKernel, launch: KernelLaunchSizeArgs) -> int:
    """The most groups of ``launch``'s group size (and dynamic memory) a cooperative launch can run."""


@hookspec
def symbol_names(device: NativeDevice, image: NativeProgram, kind: SymbolKind) -> Sequence[str]:
    """The names of the kernels (``SymbolKind.KERNEL``) or global variables of ``image``."""


# --- programs from source (offload.build) ---------------------------------------------------


@hookspec
def build_target(device: NativeDevice) -> str:
    """What a build for ``device`` depends on besides the source and options, as one string: the
    architecture (``sm_90``, ``gfx90a:sramecc+:xnack-``, the host's machine) and the toolchain
    that ``build_source`` would use, with its version (``offload.backend.build.tool_version``).
    ``offload.build`` caches images by (platform, this, source, options) for the process and on
    disk across processes (with the backend's version and ``offload_kernel.h``), so two devices
    with the same answer share builds, and an answer that misses a compiler upgrade serves a
    stale image. Cheap (asking a compiler its version once is fine); must not compile; raise
    ``HOST_TOOL_NOT_FOUND`` where ``build_source`` would.
    """


@hookspec
def build_source(device: NativeDevice, source: str, options: Sequence[str]) -> bytes:
    """Compile kernel ``source`` with this device's own toolchain into an image ``load_binary``
    accepts for ``device``; ``options`` go to the compiler as given, ``offload_kernel.h``
    (``offload.kernel_include_dir()``) on the include path. A missing compiler is
    ``HOST_TOOL_NOT_FOUND``, a failed compilation ``COMPILE_FAILURE`` with the compiler's log in
    its details (``offload.backend.build``). Optional, with ``build_target``."""
