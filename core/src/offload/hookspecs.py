"""The backend contract: everything a backend author needs to read.

A backend is an object (an instance of your class, or a module) whose methods are marked with
``offload.hookimpl`` and named after the hooks below. Publish it in your distribution's
``pyproject.toml`` under the entry-point group ``offload.backends``::

    [project.entry-points."offload.backends"]
    mydev = "offload_mydev:MyDevBackend"    # a zero-argument factory (a class works)

or register it in-process before ``olInit`` with ``offload.register_backend("mydev", factory)``.
The entry-point name is the platform name (``OL_PLATFORM_INFO_NAME``); "cuda", "amdgpu",
"level_zero" and "host" map to their ``PlatformBackend``, any other name to ``UNKNOWN``.

Lifecycle. Every ``olInit`` that starts the library afresh calls the factory once, registers the
object with pluggy (which checks every hookimpl's argument names against these specs), binds the
implementations, and calls ``init()``. The last ``olShutDown`` calls, per device: ``synchronize``
(release) for every queue still alive or parked, ``unload_binary`` for every program left,
``mem_free`` for every allocation left, ``deinit_device``; then ``deinit()``. Failures are joined,
none dropped. A backend whose factory, registration or ``init`` fails is skipped (its reason is
kept and shown by ``offload backends``), unless ``OFFLOAD_BACKENDS_STRICT`` is set.

What the core owns, so a backend never does it: the global state and its lock, argument
validation, handle objects and their liveness, the allocation map (``olMemFree`` finds the owning
device), parked queues and their reuse, program bookkeeping, tracing and error joining. Host-to-host
copies (devices of the ``host`` platform count as host memory) never reach a backend.

Calling convention. The core calls each implementation directly (not through ``pm.hook``), with
positional arguments in the order given here; an implementation may accept fewer arguments (a
subset of the names, in the same order), as pluggy allows. Opaque values that a hook returns
(``device``, ``image``, ``kernel``, ``queue``, ``event``) are the backend's own objects: the core
stores them and passes them back, never looks inside them. ``queue`` is ``None`` for a synchronous
operation, which must be complete when the hook returns.

Errors. Raise ``offload.OffloadError(code, details)`` for a failure with a known ``ErrorCode``. Any
other exception is mapped with the exception as its cause: ``MemoryError`` to ``OUT_OF_RESOURCES``,
``ValueError`` and ``TypeError`` to ``INVALID_ARGUMENT``, the rest to ``OL_ERRC_UNKNOWN``. A hook
may raise an ``ExceptionGroup`` of several errors (``synchronize`` reporting several failed host
functions, say): each is kept, joined into the ``OffloadError``'s ``.errors``. Work that fails
asynchronously on a queue is reported by the next ``synchronize`` of that queue (or ``sync_event``
of a later event); errors of a queue destroyed while busy are kept by the core and raised by the
final ``olShutDown``. A ``BaseException`` (``KeyboardInterrupt``) raised by a hook during the final
``olShutDown`` is re-raised once the rest of the teardown has run. ``offload.backend_support`` holds
what every backend does alike: ``KeptErrors`` and ``raise_kept_errors`` (a queue's errors, every one
in order), ``HostFunctions`` (host functions through a driver callback, the calls below made from
inside one deferred until it has returned), ``ResourcePool`` (reused streams and events) and
``launch_extent``.

Memory and lifetimes (the core's side, so a backend can rely on it). Before ``data_submit``,
``data_retrieve``, ``data_exchange`` or ``data_fill`` is called, every range lies inside a live
allocation (or global variable) of its device, host ranges are mapped with the access needed, no
range passes 2**64, and ``size`` is above 0. ``mem_free`` (at ``olMemFree``) is called only once every queue
(live or parked) has been seen without pending work, and ``unload_binary`` (at
``olDestroyProgram``) once every queue of its device has and no launch of the image's kernels is
being made; called from a host function, the release is enqueued (``enqueue_host_call``) behind
that function's own queue instead (a driver that forbids driver calls inside a host function, as
CUDA's and HIP's do, gets them deferred until it returned: ``backend_support.HostFunctions``). A
backend never frees or unloads under work in flight. Launches reach
``launch_kernel`` only with an argument buffer at least as long as ``kernel_params`` says, and a
grid within the MAX_WORK_GROUP_SIZE / MAX_WORK_SIZE (and per-dimension) limits the device info
gives, and of fewer than 2**64 groups.

Required hooks: ``init``, ``deinit``, ``get_device_info``, ``load_binary``, ``unload_binary``,
``synchronize``, ``has_pending_work``. Every other hook is optional, in groups a backend
implements whole or leaves out; a call that needs a missing one fails with ``OL_ERRC_UNSUPPORTED``
naming the backend and the hook. The conformance kit (``offload.testing``) derives one
``Capabilities`` flag per group from the hooks implemented (in brackets), tests the groups that
are there, and checks that the absent ones answer ``OL_ERRC_UNSUPPORTED``:

- memory: ``mem_alloc``, ``mem_free`` (``memory``). For an allocation kind the device lacks,
  ``mem_alloc`` raises ``UNSUPPORTED`` and the capabilities declare ``managed_memory`` or
  ``host_memory`` False.
- copies: ``data_submit``, ``data_retrieve`` (``copies``); ``data_exchange``
  (``device_to_device``: without it the core copies between devices through host memory).
- fill: ``data_fill`` (``fill``). Registration: ``mem_register``, ``mem_unregister``
  (``mem_register``).
- queues: ``create_queue`` (``queues``); host functions: ``enqueue_host_call``
  (``host_functions``; the core also uses it to order a host-to-host ``olMemcpy`` on a queue and
  to wait on another backend's event, which are ``UNSUPPORTED`` without it).
- events: ``create_event``, ``wait_event``, ``is_event_complete``, ``sync_event`` and, if events
  need releasing, ``destroy_event`` (``events``); ``event_elapsed_time`` (``events_elapsed_time``).
- programs: ``get_kernel``, ``get_global`` (``programs``), ``is_valid_binary`` (absent: False).
  Global variables are ``get_global`` alone (``globals``): a backend whose driver cannot give a
  program variable's address (OpenCL) leaves it out, and ``olGetSymbol(..., GLOBAL_VARIABLE)``
  then answers ``UNSUPPORTED``. Constructors and destructors have no hook (``load_binary`` and
  ``unload_binary`` run them): a backend whose program format has none (OpenCL C) declares
  ``Capabilities.constructors`` False.
  A backend without programs still implements ``load_binary``, refusing every image with
  ``INVALID_BINARY``, and ``unload_binary``, which is then never called.
- building from source: ``build_target``, ``build_source`` (``offload.build``; no kit flag: absent,
  ``offload.build`` answers ``UNSUPPORTED``).
- other libraries' streams: ``foreign_stream_wait``, ``foreign_stream_sync`` (DLPack and CUDA
  array interface ordering; no kit flag: absent, the object layer synchronises instead).
- launches: ``launch_kernel`` with ``kernel_params`` (``kernel_launch``, ``kernel_params``);
  occupancy: ``max_group_size`` (``occupancy``); cooperative launches: ``launch_kernel_cooperative``
  with ``max_cooperative_groups`` (``cooperative_launch``).
- liboffload main's additions, each optional: ``mem_alloc_aligned`` (``aligned_alloc``; without
  it ``olMemAllocAligned`` accepts a ``mem_alloc`` address that happens to be aligned, else
  UNSUPPORTED naming the device), ``mem_prefetch`` (``prefetch``; without it a prefetch is
  ignored, as liboffload does), ``symbol_names`` (``iterate_symbols``), ``data_copy_rect`` (no kit
  flag: without it ``olMemcpyRect`` copies row by row).
- the compiled data path: ``native_entry_points`` with ``native_word`` (no kit flag: absent, the
  core calls the Python hooks; the kit runs with and without them).
- ``deinit_device``: absent, the core skips it. ``no_devices_reason``: absent, ``offload backends``
  shows a zero-device backend without a note.

A hook that exists but cannot serve a case (a limited feature) raises ``OffloadError(
ErrorCode.UNSUPPORTED, ...)`` itself; the backend's ``Capabilities`` then declares that flag False.

Threads. Hooks may be called from many threads at once; per-object locking is the backend's job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NewType

import pluggy

from ._enums import AllocType, DeviceInfo, MemMigrationFlag, PlatformInfo, SymbolKind
from ._info import DEVICE_INFO, c_type
from ._types import KernelLaunchSizeArgs, KernelParam

PROJECT = "offload"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# --- the opaque values a backend hands the core ------------------------------------------------
# The core never looks inside them: it keeps what a hook returned and passes it back, unchanged,
# to the same backend's later hooks. Each is a distinct type to a type checker, so the core cannot
# pass a queue where a device is expected; a backend annotates its hookimpls with its own concrete
# types (pluggy matches hooks by argument name only) or with these names where it keeps a value
# opaque, wrapping once (``NativeQueue(stream)``, free at run time) where it hands one back.
NativeDevice = NewType("NativeDevice", object)
"""One device, as ``init`` returned it."""
NativeQueue = NewType("NativeQueue", object)
"""A queue, as ``create_queue`` returned it; a hook's ``queue`` of None means "synchronously"."""
NativeEvent = NewType("NativeEvent", object)
"""An event, as ``create_event`` returned it."""
NativeProgram = NewType("NativeProgram", object)
"""A loaded image, as ``load_binary`` returned it."""
NativeKernel = NewType("NativeKernel", object)
"""A kernel of a loaded image, as ``get_kernel`` returned it."""
NativeEntryPoints = NewType("NativeEntryPoints", object)
"""A PyCapsule of C entry points (``native_entry_points``)."""

#: The C type of every device property (``get_device_info``): "char[]", "uint32_t", "uint64_t",
#: "bool", "ol_dimensions_t", "ol_device_type_t", "ol_device_fp_capability_flag_t" ("handle":
#: PLATFORM, the core's).
DEVICE_INFO_TYPES: Mapping[DeviceInfo, str] = MappingProxyType(
    {prop: c_type(kind, enum_type) for prop, (kind, enum_type) in DEVICE_INFO.items()}
)

REQUIRED_HOOKS = frozenset(
    {"init", "deinit", "get_device_info", "load_binary", "unload_binary", "synchronize", "has_pending_work"}
)

# --- lifecycle -----------------------------------------------------------------------------


@hookspec
def init() -> Sequence[NativeDevice]:
    """Initialise the driver and return one opaque ``device`` object per usable device.

    Returning no devices is fine (no hardware): the platform then shows zero devices. Raise when
    the driver is present but broken; the backend is then skipped with that reason.
    """


@hookspec
def no_devices_reason() -> str | None:
    """Why ``init`` returned no devices (no driver library, a driver with no GPU, ...), or left
    some out (an OpenCL device without shared virtual memory), in words for ``offload backends``;
    None when there is nothing to say. Asked once, right after ``init``. Optional."""


@hookspec
def platform_info() -> Mapping[PlatformInfo, str]:
    """The platform's own VENDOR_NAME and VERSION (``str`` each; the driver's, e.g. OpenCL's
    CL_PLATFORM_VENDOR and CL_PLATFORM_VERSION), asked once after ``init``. Optional: a property
    left out reads liboffload's "Unknown platform vendor" / "v0.0.1". NAME (the entry-point name)
    and BACKEND are the core's."""


@hookspec
def deinit() -> None:
    """Release every driver resource. Called once, after every ``deinit_device``."""


@hookspec
def deinit_device(device: NativeDevice) -> None:
    """Release one device's resources (its queues, programs and memory are already gone)."""


@hookspec
def get_device_info(device: NativeDevice) -> Mapping[DeviceInfo, Any]:
    """The device's properties, asked once at ``olInit`` and cached by the core.

    ``DEVICE_INFO_TYPES`` gives each property's C type, and so its Python value: ``char[]`` a
    ``str``; ``uint32_t`` / ``uint64_t`` an ``int`` in that type's range (a value outside it makes
    ``olGetDeviceInfo`` fail with ``OL_ERRC_BACKEND_FAILURE`` naming the property, the value and
    the type); ``bool`` a ``bool``; ``ol_dimensions_t`` an ``offload.Dimensions`` (or a 3-tuple of
    uint32); ``ol_device_type_t`` a ``DeviceType``; ``ol_device_fp_capability_flag_t`` a
    ``DeviceFpCapabilityFlag`` (or int). PLATFORM is the core's. Defaults for a property left out
    of the mapping:

    - TYPE: HOST for the ``host`` platform, GPU otherwise;
    - SINGLE_FP_CONFIG and DOUBLE_FP_CONFIG: 127 (every flag), HALF_FP_CONFIG: 0 (liboffload R1);
    - SINGLE/DOUBLE/HALF_FP_SUPPORT: whether that FP config (given or defaulted) is non-zero;
    - NATIVE_VECTOR_WIDTH_*: 1, and 0 for HALF (liboffload R1);
    - MAX_MEM_ALLOC_SIZE: GLOBAL_MEM_SIZE, when that is given;
    - PRODUCT_NAME: NAME, when that is given;
    - COOPERATIVE_LAUNCH_SUPPORT: whether ``max_cooperative_groups`` is implemented;
    - DRIVER_ID: a CRC-32 of the platform's name and DRIVER_VERSION (devices of one driver share it).

    Any other property left out makes ``olGetDeviceInfo`` fail with ``OL_ERRC_UNIMPLEMENTED``.
    """


# --- programs and symbols ------------------------------------------------------------------


@hookspec
def is_valid_binary(device: NativeDevice, data: bytes) -> bool:
    """Whether ``data`` could be loaded on ``device`` (a cheap check; no loading). Default: False."""


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
    """The explicit parameters of ``kernel`` in order, as laid out in the packed argument buffer.

    The core asks once per kernel symbol (at ``olGetSymbol``; the answer is kept on the symbol) and
    refuses a launch whose argument buffer is shorter than the end of the last parameter
    (``INVALID_ARGUMENT``, naming both sizes), and ``args=None`` for a kernel with parameters; a
    longer buffer (a C struct with tail padding) is accepted. Items may be ``KernelParam`` or
    ``(offset, size[, kind, name])`` tuples. Return ``None`` only when the image does not say (the
    core then cannot check, and the backend documents its rule); a driver that needs the
    parameters' types to launch (OpenCL) always answers, from the kernel's own metadata
    (``clGetKernelArgInfo``), laying the parameters out as a C compiler lays out their struct.
    Parameters the packed struct does not carry (OpenCL's ``local`` pointer taking the launch's
    dynamic local memory) are left out. A driver is given exactly the
    parameters' extent, ``offload.backend_support.launch_extent(params)``, not a longer buffer. A backend that implements
    ``launch_kernel`` implements this too; one that does not is treated as answering ``None``.
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

    ``queue`` is None for a synchronous launch: the kernel has finished when the hook returns.
    ``args`` is ``None`` for no arguments; otherwise a bytes-like object (``bytes``,
    ``bytearray``, ``memoryview`` or a ctypes structure: read it through ``memoryview``) that the
    caller may reuse as soon as this hook returns (copy it, or hand its parts to the driver, when
    the launch is enqueued). It is the packed C struct of the parameters ``kernel_params`` gives;
    a driver that takes arguments one by one (OpenCL's ``clSetKernelArg``) unpacks it by them. ``launch`` is immutable
    and within the limits the device reported: every extent is at least 1, and the group size,
    the grid's work-items and each dimension's work-items are at most MAX_WORK_GROUP_SIZE(_PER_
    DIMENSION) and MAX_WORK_SIZE(_PER_DIMENSION). A backend may cache what it derives from a
    launch object by its identity while it holds a reference to it.
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
    that ``build_source`` would use. ``offload.build`` caches images by (platform, this, source,
    options), so two devices with the same answer share builds. Cheap; must not compile.
    """


@hookspec
def build_source(device: NativeDevice, source: str, options: Sequence[str]) -> bytes:
    """Compile kernel ``source`` with this device's own toolchain into an image that
    ``load_binary`` accepts for ``device``; ``options`` go to the compiler as given.

    The portable header ``offload_kernel.h`` (``offload.kernel_include_dir()``) must be on the
    include path. A compiler that is missing is ``HOST_TOOL_NOT_FOUND``; a failed compilation is
    ``COMPILE_FAILURE`` whose details carry the compiler's log (``offload.build_support``).
    Optional, with ``build_target`` (absent: ``offload.build`` answers ``UNSUPPORTED``).
    """


# --- other libraries' streams (DLPack, __cuda_array_interface__) ------------------------------


@hookspec
def foreign_stream_wait(device: NativeDevice, stream: int, event: NativeEvent) -> None:
    """Make the driver stream ``stream`` (a raw handle another library owns, as DLPack's
    ``__dlpack__(stream=...)`` passes it) wait for ``event`` (of this device) without blocking
    the host. Optional (absent: ``offload.foreign_stream_wait`` answers ``UNSUPPORTED`` and the
    object layer synchronises the device's queues instead)."""


@hookspec
def foreign_stream_sync(device: NativeDevice, stream: int) -> None:
    """Block until everything enqueued so far on the driver stream ``stream`` (another library's,
    as ``__cuda_array_interface__``'s ``stream`` names it) has finished. Optional."""


# --- memory ----------------------------------------------------------------------------------


@hookspec
def mem_alloc_aligned(device: NativeDevice, alloc_type: AllocType, size: int, alignment: int) -> int:
    """``mem_alloc`` whose address is a multiple of ``alignment`` (a power of two above 1);
    UNSUPPORTED for an alignment the device cannot give. ``mem_free`` frees it."""


@hookspec
def mem_prefetch(device: NativeDevice, queue: NativeQueue, address: int, size: int, flags: MemMigrationFlag) -> None:
    """In queue order, migrate ``[address, address + size)`` (inside one MANAGED allocation) towards
    the device (``HOST_TO_DEVICE``) or the host (``DEVICE_TO_HOST`` alone). A hint: it changes no data."""


@hookspec
def mem_alloc(device: NativeDevice, alloc_type: AllocType, size: int) -> int:
    """Allocate ``size`` (> 0) bytes of the given kind; return the address (never 0)."""


@hookspec
def mem_free(device: NativeDevice, address: int, alloc_type: AllocType) -> None:
    """Free an address returned by ``mem_alloc`` (the core guarantees it is a live base address)."""


@hookspec
def mem_register(device: NativeDevice, address: int, size: int, lock: bool) -> int:
    """Register (and, if ``lock``, page-lock) host memory; return the pinned address.

    Called once per range: the core counts users, refuses partial overlaps and never registers a
    range inside one it already registered."""


@hookspec
def mem_unregister(device: NativeDevice, address: int, size: int, unlock: bool) -> None:
    """Undo the ``mem_register`` of exactly ``[address, address + size)``, when its last user is
    gone. ``unlock``: the range was registered with ``lock`` and ``UNLOCK_MEMORY`` was asked."""


@hookspec
def data_submit(device: NativeDevice, dst: int, src: int, size: int, queue: NativeQueue | None) -> None:
    """Copy ``size`` bytes from host memory ``src`` to device memory ``dst``."""


@hookspec
def data_retrieve(device: NativeDevice, dst: int, src: int, size: int, queue: NativeQueue | None) -> None:
    """Copy ``size`` bytes from device memory ``src`` to host memory ``dst``."""


@hookspec
def data_exchange(
    src_device: NativeDevice, src: int, dst_device: NativeDevice, dst: int, size: int, queue: NativeQueue | None
) -> None:
    """Copy between two devices of this backend. If absent, the core bounces through host memory."""


@hookspec
def data_copy_rect(
    device: NativeDevice,
    dst: int,
    dst_pitches: tuple[int, int],
    src: int,
    src_pitches: tuple[int, int],
    extent: tuple[int, int, int],
    queue: NativeQueue | None,
) -> None:
    """Copy ``extent`` (bytes per row, rows, slices; none zero) from the pitched region whose first
    byte is ``src`` to the one at ``dst``; ``*_pitches`` are (row pitch, slice pitch) in bytes.
    Each side is host memory or memory of ``device`` (the core calls it only so); the core has
    checked both regions' spans and the pitches (row pitch >= bytes per row; slice pitch >= rows x
    row pitch for more than one slice). With a ``queue`` the copy runs in its order. Optional:
    absent, ``olMemcpyRect`` copies row by row through ``data_submit``/``data_retrieve``/``data_exchange``."""


@hookspec
def data_fill(device: NativeDevice, address: int, pattern: bytes, size: int, queue: NativeQueue | None) -> None:
    """Fill ``size`` bytes at ``address`` with ``pattern`` repeated.

    ``pattern`` is ``bytes`` of any length from 1 up (not only powers of two: liboffload's own
    tests fill with 3- and 17-byte patterns), ``size`` a multiple of that length, at least it;
    ``address`` has no alignment promised. A driver whose fill takes only some lengths (CUDA's
    cuMemsetD8/16/32; OpenCL's powers of two up to 128 at an address aligned to them) serves the
    others itself (expanding the pattern and copying, or filling in steps). With a ``queue`` the
    fill is ordered like any other work of it (``Capabilities.queued_fill``)."""


# --- queues ----------------------------------------------------------------------------------


@hookspec
def create_queue(device: NativeDevice) -> NativeQueue:
    """Create an in-order queue and return it as an opaque ``queue`` (driver streams are worth
    reusing: ``offload.backend_support.ResourcePool``)."""


@hookspec
def synchronize(device: NativeDevice, queue: NativeQueue, release: bool) -> None:
    """Block until ``queue`` has no pending work, then raise its asynchronous errors, if any (one
    exception, or an ``ExceptionGroup`` of all of them: each is kept).

    With ``release`` the queue is finished: free it (no thread of it may outlive this call). Without
    it the queue stays usable; the core uses that before reusing a parked queue. ``release`` may be
    called from a host function running on the queue itself (the final ``olShutDown`` called there):
    then drop the work queued behind that function, do not wait for it, and let the queue's thread
    end as soon as the function returns (``backend_support.HostFunctions.synchronize``).
    """


@hookspec
def has_pending_work(device: NativeDevice, queue: NativeQueue) -> bool:
    """Whether ``queue`` has work queued or running. Must not block. If unknowable, return True.

    The core polls it (``olMemFree``, ``olDestroyProgram``, interpreter exit) to wait for a queue
    it does not own without enqueuing anything on it or taking its errors.
    """


@hookspec
def enqueue_host_call(device: NativeDevice, queue: NativeQueue, callback: Callable[[], None]) -> None:
    """Run ``callback()`` in queue order: after all earlier work, before all later work.

    An exception from the callback is an asynchronous error of the queue (kept in order with the
    others: ``offload.backend_support.KeptErrors``).
    """


# --- events ----------------------------------------------------------------------------------


@hookspec
def create_event(device: NativeDevice, queue: NativeQueue) -> NativeEvent:
    """Create and record an event on ``queue``: complete once all earlier work is. Return it."""


@hookspec
def destroy_event(device: NativeDevice, event: NativeEvent) -> None:
    """Release an event."""


@hookspec
def wait_event(device: NativeDevice, queue: NativeQueue, event: NativeEvent) -> None:
    """Make later work on ``queue`` wait until ``event`` (of any queue of this backend) is complete."""


@hookspec
def is_event_complete(device: NativeDevice, event: NativeEvent) -> bool:
    """Whether ``event`` is complete. Must not block."""


@hookspec
def sync_event(device: NativeDevice, event: NativeEvent) -> None:
    """Block until ``event`` is complete."""


@hookspec
def event_elapsed_time(device: NativeDevice, start: NativeEvent, end: NativeEvent) -> float:
    """Milliseconds between two complete events of this device."""


# --- native entry points (optional: the compiled data path) -----------------------------------


@hookspec
def native_entry_points(device: NativeDevice) -> NativeEntryPoints | None:
    """A PyCapsule named ``"offload.native_entry_points"`` holding a ``const
    offload_native_entry_points *`` (``offload/include/offload_native.h``, which states every
    obligation): C functions the core's compiled path calls, without the GIL, instead of the
    Python hooks ``launch_kernel``, ``data_submit``, ``data_retrieve``, ``data_exchange``,
    ``synchronize`` and ``has_pending_work``. An entry point either makes the operation or defers,
    having done nothing, to the Python hook. None: this device has none (the same as absent)."""


@hookspec
def native_word(device: NativeDevice, native: NativeDevice | NativeQueue | NativeKernel) -> int | None:
    """The pointer-sized word the native entry points take for ``native`` (this device itself, one
    of its queues or kernels), valid until that object is released; None: calls with it use the
    Python hooks. Asked once per object."""


HOOK_NAMES: tuple[str, ...] = tuple(
    name for name, value in list(globals().items()) if callable(value) and hasattr(value, PROJECT + "_spec")
)

__all__ = [
    "hookimpl",
    "hookspec",
    "DEVICE_INFO_TYPES",
    "HOOK_NAMES",
    "REQUIRED_HOOKS",
    "PROJECT",
    "NativeDevice",
    "NativeQueue",
    "NativeEvent",
    "NativeProgram",
    "NativeKernel",
    "NativeEntryPoints",
]
