"""The backend contract: the hooks a backend implements and what the core promises them.

A backend is an object whose methods, marked ``offload.hookimpl``, are named after the hooks
below, published under the entry-point group ``offload.backends`` (the entry-point name is the
platform name) or registered with ``offload.register_backend`` before ``olInit``. "Writing a
backend" (docs/backends.md) tells the rest: the lifecycle in full, the template, the capabilities,
reading a kit failure. The obligations in short:

- ``init`` runs once per ``olInit`` that starts the library afresh; the last ``olShutDown``
  releases what is left (queues, programs, allocations), then calls ``deinit_device`` per device
  and ``deinit``. A backend whose factory or ``init`` fails is skipped with its reason.
- The core owns the global state, validation, handles, the allocation map, parked queues, program
  bookkeeping, tracing and error joining. A host-to-host copy is the core's: a synchronous one
  below 4 MiB is one ``memmove``; from 4 MiB it goes to the destination host device's
  ``data_submit`` (``dst`` and ``src`` both host memory: the host backend copies in parallel); a
  queued one is an ``enqueue_host_call`` on the queue that runs the ``memmove``. It calls each
  hookimpl directly with positional arguments in the order given here (a hookimpl may take a
  subset of the names, in order), hands back unchanged the opaque values a hook returned
  (``NativeDevice``, ``NativeQueue``, ...), and passes ``queue`` None for a synchronous operation,
  which is complete when the hook returns.
- Errors: raise ``OffloadError(code, details)``; other exceptions map to ``OUT_OF_RESOURCES``
  (``MemoryError``), ``INVALID_ARGUMENT`` (``ValueError``, ``TypeError``) or ``UNKNOWN``, and an
  ``ExceptionGroup`` keeps each of its errors. A queue's asynchronous failures are raised, every
  one in order, by its next ``synchronize`` and by ``sync_event`` of an event recorded after them
  (the hook is given the event's ``queue``); the kit checks it (``TestEvent``).
- A lost device (the link gone, the driver reset): every hook that needs it raises
  ``OffloadError(BACKEND_FAILURE, ...)`` naming the device, ``has_pending_work`` included (never
  True for ever: the core polls it); the API call that met it gets that error, and the final
  ``olShutDown`` reports it and releases everything else.
- Timing of queued copies: ``data_submit`` may read host ``src`` at enqueue or when the copy runs
  (the caller keeps it unchanged until the queue passes it); ``data_retrieve`` writes host ``dst``
  in queue order: before the queue's later work (a host function) runs and before a sync of the
  queue or of a later event returns, never before earlier work is done.
- Addresses: what ``mem_alloc`` (and ``get_global``) return are process-wide unique integers: the
  core keeps one allocation map for every device and the host, so a device whose pointers are
  not host addresses (a remote device) hands out numbers from a range the process itself can
  never use (reserve one with ``mmap(PROT_NONE)``). The core reads and writes HOST and MANAGED
  allocations itself (host-to-host ``olMemcpy``, fills of host memory, the object layer's numpy
  views): they must be host memory this process maps, else ``mem_alloc`` refuses them.
- A backend never calls this process's ``ol*`` API from a hook. One built on offload (a proxy of
  another process's device) runs that offload in its own process, started with
  ``OFFLOAD_BACKENDS`` naming the backends it loads (not itself).
- Teardown: the final ``olShutDown`` of an idle device returns within
  ``offload_testing.suite.TEARDOWN_LIMIT_S`` (5 s; ``TestTeardown``): never wait out a timeout
  in ``synchronize(release)``, ``deinit_device`` or ``deinit``.
- A data hook gets only ranges inside live allocations (or globals) of its device, mapped as
  needed, below 2**64, ``size`` above 0. ``mem_free`` and ``unload_binary`` come only once the
  device's queues are idle (asked from a host function, they are enqueued behind it): a backend
  never frees under work in flight. A launch comes with an argument buffer at least as long as
  ``kernel_params`` says and a grid within the device's limits.
- Hooks may be called from many threads at once: per-object locking is the backend's job.
  ``offload.backend.support`` holds what every backend does alike (``KeptErrors``,
  ``HostFunctions``, ``ResourcePool``, ``launch_extent``).

Required hooks: ``REQUIRED_HOOKS``. Every other hook is in an optional group, implemented whole or
left out: a call that needs a missing one fails ``UNSUPPORTED`` naming the backend and the hook.
The conformance kit derives one ``Capabilities`` flag per group (in brackets):

- memory: ``mem_alloc``, ``mem_free`` (``memory``; ``managed_memory`` / ``host_memory`` False where
  ``mem_alloc`` refuses that kind); ``mem_register``, ``mem_unregister`` (``mem_register``).
- copies: ``data_submit``, ``data_retrieve`` (``copies``); ``data_exchange`` (``device_to_device``;
  absent, copies bounce through host memory); ``data_fill`` (``fill``).
- queues: ``create_queue`` (``queues``); ``enqueue_host_call`` (``host_functions``; it also orders
  a queued host-to-host ``olMemcpy`` and waits on another backend's event).
- events: ``create_event``, ``wait_event``, ``is_event_complete``, ``sync_event``, and
  ``destroy_event`` if events need releasing (``events``); ``event_elapsed_time``
  (``events_elapsed_time``).
- programs: ``get_kernel``, ``get_global`` (``programs``; ``get_global`` alone: ``globals``),
  ``is_valid_binary`` (absent: False). Constructors and destructors run in ``load_binary`` /
  ``unload_binary`` (none in the format: ``Capabilities.constructors`` False). Without programs,
  ``load_binary`` still refuses every image with ``INVALID_BINARY``.
- launches: ``launch_kernel`` with ``kernel_params`` (``kernel_launch``, ``kernel_params``);
  ``max_group_size`` (``occupancy``); ``launch_kernel_cooperative`` with
  ``max_cooperative_groups`` (``cooperative_launch``).
- liboffload main's: ``mem_alloc_aligned`` (``aligned_alloc``; absent, an aligned ``mem_alloc``
  address is accepted), ``mem_prefetch`` (``prefetch``; absent, ignored), ``symbol_names``
  (``iterate_symbols``), ``data_copy_rect`` (absent, row by row).
- after ``init``: ``served_hooks`` names the optional hooks the device found serves (a forwarding
  backend, a driver with optional features); the rest answer ``UNSUPPORTED`` and the kit's flags
  follow. Absent: every hook the backend defines (hook presence decides).
- no kit flag: ``build_target`` with ``build_source`` (``offload.build``); ``foreign_stream_wait``,
  ``foreign_stream_sync`` (absent, the object layer synchronises); ``queue_stream`` and
  ``adopt_stream`` (absent, ``offload.queue_stream`` / ``offload.adopt_stream`` are UNSUPPORTED);
  ``mem_alloc_async`` with ``mem_free_async`` (absent, ``olMemAllocAsync`` / ``olMemFreeAsync``
  use the core's pool over ``mem_alloc`` and ``enqueue_host_call``); ``deinit_device``,
  ``no_devices_reason``, ``platform_info`` (absent, the core does without).
- the compiled data path: ``native_entry_points`` with ``native_word`` (no kit flag: absent, the
  core calls the Python hooks; the kit runs with and without them).

A hook that exists but cannot serve a case raises ``OffloadError(ErrorCode.UNSUPPORTED, ...)``;
the backend's ``Capabilities`` then declares that flag False.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import pluggy

from ._values.enums import AllocType, DeviceInfo, MemMigrationFlag, PlatformInfo, SymbolKind
from ._values.info import DEVICE_INFO_TYPES
from ._values.opaque import NativeDevice, NativeEntryPoints, NativeEvent, NativeKernel, NativeProgram, NativeQueue
from ._values.types import KernelLaunchSizeArgs, KernelParam

PROJECT = "offload"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

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
def served_hooks() -> Collection[str] | None:
    """The optional hooks this backend serves, given what ``init`` found; asked once, right after
    it. A backend whose features depend on the device (a driver with optional features, a
    forwarding backend that asks the device on the other side) defines every hook it might serve
    and names here those it does: the others answer ``UNSUPPORTED`` as if absent, and the
    conformance kit derives ``Capabilities`` from this answer. Required hooks and this one are
    always served. None (or the hook absent): every hook the backend defines. Naming a hook the
    backend does not define fails ``init`` (``INVALID_VALUE``)."""


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


@hookspec
def queue_stream(device: NativeDevice, queue: NativeQueue) -> int:
    """The driver stream under ``queue`` (made by ``create_queue`` or ``adopt_stream``) as an int
    (a ``CUstream`` / ``hipStream_t`` address), for another library to enqueue work on in the
    queue's order (``offload.queue_stream``, ``Queue.__cuda_stream__``). Optional, with
    ``adopt_stream``."""


@hookspec
def adopt_stream(device: NativeDevice, stream: int) -> NativeQueue:
    """A queue over ``stream``, a driver stream of ``device`` that another library made and owns
    (an int handle, as ``__cuda_stream__`` gives it; the legacy default stream's too). Every queue
    hook then takes it like one of ``create_queue``: offload's work goes on that stream, in order
    with the owner's, and ``has_pending_work`` / ``synchronize`` see the owner's work too.
    ``synchronize(release=True)`` ends only what the backend made for it (host-function state, its
    native record), never the stream; the core never reuses an adopted queue for ``olCreateQueue``.
    ``INVALID_ARGUMENT`` for a handle the driver does not know as a stream of ``device``'s context.
    Optional, with ``queue_stream``."""


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
def mem_alloc_async(device: NativeDevice, queue: NativeQueue, alloc_type: AllocType, size: int) -> int:
    """Allocate ``size`` (> 0) bytes of DEVICE memory (the only ``alloc_type`` the core passes) in
    ``queue``'s order, from a pool (``cuMemAllocAsync``, ``hipMallocAsync``): the address (never 0)
    is returned at once, the memory is usable by work enqueued on ``queue`` after this, and by other
    queues once they wait for an event recorded after it. Optional, with ``mem_free_async``."""


@hookspec
def mem_free_async(device: NativeDevice, queue: NativeQueue, address: int) -> None:
    """Free an allocation (a base address of ``mem_alloc_async``, or of ``mem_alloc`` of DEVICE
    memory) in ``queue``'s order: once the work enqueued on ``queue`` before it has finished
    (``cuMemFreeAsync``, ``hipFreeAsync``). The core has already taken the range out of every
    check and out of its map, and comes at once, not once the device is idle: the driver's pool
    may hand the memory to a later ``mem_alloc_async`` on ``queue`` before the free runs."""


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
    """Copy ``size`` bytes from host memory ``src`` to device memory ``dst``, in ``queue``'s order
    (None: done on return). The host bytes may be read at enqueue (a remote device sends them
    with the request) or when the copy runs: the caller leaves them unchanged until the queue has
    passed the copy. On a host device both are host memory: the core hands it the synchronous
    host-to-host copies of 4 MiB or more."""


@hookspec
def data_retrieve(device: NativeDevice, dst: int, src: int, size: int, queue: NativeQueue | None) -> None:
    """Copy ``size`` bytes from device memory ``src`` to host memory ``dst``, in ``queue``'s order
    (None: done on return). Host ``dst`` is written after the queue's earlier work and before its
    later work (a host function enqueued next reads the bytes) and before ``synchronize`` or the
    ``sync_event`` of a later event returns."""


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
    """Copy ``extent`` (bytes per row, rows, slices; none zero) from the pitched region at ``src`` to
    the one at ``dst`` (``*_pitches``: row pitch, slice pitch, in bytes), in ``queue``'s order if
    given. Each side is host memory or ``device``'s; the core has checked both regions' spans and
    the pitches (row pitch >= bytes per row; slice pitch >= rows x row pitch for several slices)."""


@hookspec
def data_fill(device: NativeDevice, address: int, pattern: bytes, size: int, queue: NativeQueue | None) -> None:
    """Fill ``size`` bytes at ``address`` with ``pattern`` repeated, in ``queue``'s order if given
    (``Capabilities.queued_fill``). ``pattern`` is ``bytes`` of any length from 1 up (liboffload's
    tests use 3 and 17), ``size`` a multiple of it, at least it; ``address`` has no alignment
    promised. A driver whose fill takes only some lengths (CUDA's cuMemsetD8/16/32; OpenCL's powers
    of two up to 128, aligned) serves the others itself (expanding the pattern and copying)."""


# --- queues ----------------------------------------------------------------------------------


@hookspec
def create_queue(device: NativeDevice) -> NativeQueue:
    """Create an in-order queue and return it as an opaque ``queue`` (driver streams are worth
    reusing: ``offload.backend.support.ResourcePool``)."""


@hookspec
def synchronize(device: NativeDevice, queue: NativeQueue, release: bool) -> None:
    """Block until ``queue`` has no pending work, then raise its asynchronous errors, if any (one
    exception, or an ``ExceptionGroup`` of all of them: each is kept).

    With ``release`` the queue is finished: free it (no thread of it may outlive this call); without
    it the queue stays usable (the core uses that before reusing a parked queue). ``release`` may
    come from a host function running on the queue itself (the final ``olShutDown`` called there):
    then drop the work queued behind that function without waiting for it, and let the queue's
    thread end once the function returns (``backend_support.HostFunctions.synchronize``).
    """


@hookspec
def has_pending_work(device: NativeDevice, queue: NativeQueue) -> bool:
    """Whether ``queue`` has work queued or running; True while that cannot be known yet. Must not
    block: the core polls it (``olMemFree``, ``olDestroyProgram``, interpreter exit) to wait for a
    queue it does not own without enqueuing anything on it or taking its errors. When it can never
    be known (the device is lost) raise ``OffloadError(BACKEND_FAILURE)`` instead: the poll ends
    with that error."""


@hookspec
def enqueue_host_call(device: NativeDevice, queue: NativeQueue, callback: Callable[[], None]) -> None:
    """Run ``callback()`` in queue order: after all earlier work, before all later work. An exception
    from it is an asynchronous error of the queue (kept in order: ``backend_support.KeptErrors``)."""


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
def sync_event(device: NativeDevice, event: NativeEvent, queue: NativeQueue | None) -> None:
    """Block until ``event`` is complete, then raise the asynchronous errors of the work recorded
    before it on ``queue`` (the queue it was recorded on; None once that queue was destroyed, whose
    errors then go to the final ``olShutDown``), as ``synchronize`` would: those errors, every one
    in order. Whether ``synchronize`` raises them again is the backend's (the kit accepts both)."""


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
    "hookimpl", "hookspec", "DEVICE_INFO_TYPES", "HOOK_NAMES", "REQUIRED_HOOKS", "PROJECT",
    "NativeDevice", "NativeQueue", "NativeEvent", "NativeProgram", "NativeKernel", "NativeEntryPoints",
]  # fmt: skip
