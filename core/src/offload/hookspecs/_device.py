"""The contract's hooks of a device and its programs: the lifecycle (a backend, its devices and their
properties), programs and their kernels, globals and launches, programs built from source
(``offload.build``), and other libraries' streams (DLPack, ``__cuda_array_interface__``,
``__cuda_stream__``). ``offload.hookspecs`` marks them as its hook specifications and re-exports
them; its docstring states the obligations."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .._values.enums import DeviceInfo, PlatformInfo, SymbolKind
from .._values.opaque import NativeDevice, NativeEvent, NativeKernel, NativeProgram, NativeQueue
from .._values.types import KernelLaunchSizeArgs, KernelParam


# --- lifecycle -----------------------------------------------------------------------------


def init() -> Sequence[NativeDevice]:
    """Initialise the driver and return one opaque ``device`` object per usable device.

    Returning no devices is fine (no hardware): the platform then shows zero devices. Raise when
    the driver is present but broken; the backend is then skipped with that reason.
    """


def served_hooks() -> Collection[str] | None:
    """The optional hooks this backend serves, given what ``init`` found; asked once, right after
    it. A backend whose features depend on the device (a driver with optional features, a
    forwarding backend that asks the device on the other side) defines every hook it might serve
    and names here those it does: the others answer ``UNSUPPORTED`` as if absent, and the
    conformance kit derives ``Capabilities`` from this answer. Required hooks and this one are
    always served. None (or the hook absent): every hook the backend defines. Naming a hook the
    backend does not define fails ``init`` (``INVALID_VALUE``)."""


def no_devices_reason() -> str | None:
    """Why ``init`` returned no devices (no driver library, a driver with no GPU, ...), or left
    some out (an OpenCL device without shared virtual memory), in words for ``offload backends``;
    None when there is nothing to say. Asked once, right after ``init``. Optional."""


def platform_info() -> Mapping[PlatformInfo, str]:
    """The platform's own VENDOR_NAME and VERSION (``str`` each; the driver's, e.g. OpenCL's
    CL_PLATFORM_VENDOR and CL_PLATFORM_VERSION), asked once after ``init``. Optional: a property
    left out reads liboffload's "Unknown platform vendor" / "v0.0.1". NAME (the entry-point name)
    and BACKEND are the core's."""


def deinit() -> None:
    """Release every driver resource. Called once, after every ``deinit_device``."""


def deinit_device(device: NativeDevice) -> None:
    """Release one device's resources (its queues, programs and memory are already gone)."""


def get_device_info(device: NativeDevice) -> Mapping[DeviceInfo, Any]:
    """The device's properties, asked once at ``olInit`` and cached by the core.

    ``DEVICE_INFO_TYPES`` gives each property's C type, and so its Python value: ``char[]`` a
    ``str``; ``uint32_t`` / ``uint64_t`` an ``int`` in that type's range (else ``olGetDeviceInfo``
    fails with ``OL_ERRC_BACKEND_FAILURE`` naming the property, the value and the type); ``bool`` a
    ``bool``; ``ol_dimensions_t`` an ``offload.Dimensions`` (or a 3-tuple of uint32); the enum types
    a ``DeviceType`` / ``DeviceFpCapabilityFlag`` (or int). PLATFORM is the core's. Left out of the
    mapping, TYPE, the FP configs and ``*_FP_SUPPORT``, the vector widths, MAX_MEM_ALLOC_SIZE,
    PRODUCT_NAME, COOPERATIVE_LAUNCH_SUPPORT and DRIVER_ID take the defaults docs/backends.md lists
    (liboffload R1's, or derived from the properties given); any other property left out makes
    ``olGetDeviceInfo`` fail with ``OL_ERRC_UNIMPLEMENTED``.
    """


# --- programs and symbols ------------------------------------------------------------------


def is_valid_binary(device: NativeDevice, data: bytes) -> bool:
    """Whether ``data`` could be loaded on ``device``: a check of the image's format (headers, the
    target) where that decides it, else as much of the loading as answers it (a source format
    compiled without keeping the result). Default: False."""


def load_binary(device: NativeDevice, data: bytes) -> NativeProgram:
    """Load a program image and return an opaque ``image``.

    ``data`` is the core's private copy; the backend may keep it. Raise ``INVALID_BINARY`` for
    anything that is not a loadable image for this device (a source that does not compile
    included, with the compiler's log). Global constructors, where the format has them, run here.
    """


def unload_binary(device: NativeDevice, image: NativeProgram) -> None:
    """Unload one image loaded by ``load_binary`` (global destructors run here)."""


def get_kernel(device: NativeDevice, image: NativeProgram, name: str) -> NativeKernel:
    """Return an opaque ``kernel`` for the kernel ``name`` in ``image``; ``NOT_FOUND`` if absent."""


def get_global(device: NativeDevice, image: NativeProgram, name: str) -> tuple[int, int]:
    """Return ``(address, size)`` of the global variable ``name`` in ``image``; ``NOT_FOUND`` if absent."""


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


def max_group_size(device: NativeDevice, kernel: NativeKernel, dynamic_memory: int) -> int:
    """The work-group size giving optimal occupancy with ``dynamic_memory`` bytes of local memory."""


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


def launch_kernel_cooperative(
    device: NativeDevice, queue: NativeQueue | None, kernel: NativeKernel, args: bytes | None, launch: KernelLaunchSizeArgs
) -> None:
    """``launch_kernel`` with every group resident at once, so that a grid-wide barrier in the
    kernel synchronises all groups. The core has checked the grid against ``max_cooperative_groups``."""


def max_cooperative_groups(device: NativeDevice, kernel: NativeKernel, launch: KernelLaunchSizeArgs) -> int:
    """The most groups of ``launch``'s group size (and dynamic memory) a cooperative launch can run."""


def symbol_names(device: NativeDevice, image: NativeProgram, kind: SymbolKind) -> Sequence[str]:
    """The names of the kernels (``SymbolKind.KERNEL``) or global variables of ``image``."""


# --- programs from source (offload.build) ---------------------------------------------------


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


def build_source(device: NativeDevice, source: str, options: Sequence[str]) -> bytes:
    """Compile kernel ``source`` with this device's own toolchain into an image ``load_binary``
    accepts for ``device``; ``options`` go to the compiler as given, ``offload_kernel.h``
    (``offload.kernel_include_dir()``) on the include path. A missing compiler is
    ``HOST_TOOL_NOT_FOUND``, a failed compilation ``COMPILE_FAILURE`` with the compiler's log in
    its details (``offload.backend.build``). Optional, with ``build_target``."""


# --- other libraries' streams (DLPack, __cuda_array_interface__) ------------------------------


def foreign_stream_wait(device: NativeDevice, stream: int, event: NativeEvent) -> None:
    """Make the driver stream ``stream`` (a raw handle another library owns, as DLPack's
    ``__dlpack__(stream=...)`` passes it) wait for ``event`` (of this device) without blocking
    the host. Optional (absent: ``offload.foreign_stream_wait`` answers ``UNSUPPORTED`` and the
    object layer synchronises the device's queues instead)."""


def foreign_stream_sync(device: NativeDevice, stream: int) -> None:
    """Block until everything enqueued so far on the driver stream ``stream`` (another library's,
    as ``__cuda_array_interface__``'s ``stream`` names it) has finished. Optional."""


def queue_stream(device: NativeDevice, queue: NativeQueue) -> int:
    """The driver stream under ``queue`` (made by ``create_queue`` or ``adopt_stream``) as an int
    (a ``CUstream`` / ``hipStream_t`` address), for another library to enqueue work on in the
    queue's order (``offload.queue_stream``, ``Queue.__cuda_stream__``). Optional, with
    ``adopt_stream``."""


def adopt_stream(device: NativeDevice, stream: int) -> NativeQueue:
    """A queue over ``stream``, a driver stream of ``device`` that another library made and owns
    (an int handle, as ``__cuda_stream__`` gives it; the legacy default stream's too). Every queue
    hook then takes it like one of ``create_queue``: offload's work goes on that stream, in order
    with the owner's, and ``has_pending_work`` / ``synchronize`` see the owner's work too.
    ``synchronize(release=True)`` ends only what the backend made for it (host-function state, its
    native record), never the stream; the core never reuses an adopted queue for ``olCreateQueue``.
    ``INVALID_ARGUMENT`` for a handle the driver does not know as a stream of ``device``'s context.
    Optional, with ``queue_stream``."""
