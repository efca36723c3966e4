"""The contract's hooks of the data path: memory (allocations, registrations, copies and fills), queues
and events, and the optional native entry points (the compiled data path;
``offload/include/offload_native.h`` states their every obligation). ``offload.hookspecs`` marks
them as its hook specifications and re-exports them; its docstring states the obligations."""

from __future__ import annotations

from collections.abc import Callable

from .._values.enums import AllocType, MemMigrationFlag
from .._values.opaque import NativeDevice, NativeEntryPoints, NativeEvent, NativeKernel, NativeQueue


# --- memory ----------------------------------------------------------------------------------


def mem_alloc_aligned(device: NativeDevice, alloc_type: AllocType, size: int, alignment: int) -> int:
    """``mem_alloc`` whose address is a multiple of ``alignment`` (a power of two above 1);
    UNSUPPORTED for an alignment the device cannot give. ``mem_free`` frees it."""


def mem_prefetch(device: NativeDevice, queue: NativeQueue, address: int, size: int, flags: MemMigrationFlag) -> None:
    """In queue order, migrate ``[address, address + size)`` (inside one MANAGED allocation) towards
    the device (``HOST_TO_DEVICE``) or the host (``DEVICE_TO_HOST`` alone). A hint: it changes no data."""


def mem_alloc(device: NativeDevice, alloc_type: AllocType, size: int) -> int:
    """Allocate ``size`` (> 0) bytes of the given kind; return the address (never 0)."""


def mem_free(device: NativeDevice, address: int, alloc_type: AllocType) -> None:
    """Free an address returned by ``mem_alloc`` (the core guarantees it is a live base address)."""


def mem_alloc_async(device: NativeDevice, queue: NativeQueue, alloc_type: AllocType, size: int) -> int:
    """Allocate ``size`` (> 0) bytes of DEVICE memory (the only ``alloc_type`` the core passes) in
    ``queue``'s order, from a pool (``cuMemAllocAsync``, ``hipMallocAsync``): the address (never 0)
    is returned at once, the memory is usable by work enqueued on ``queue`` after this, and by other
    queues once they wait for an event recorded after it. Optional, with ``mem_free_async``."""


def mem_free_async(device: NativeDevice, queue: NativeQueue, address: int) -> None:
    """Free an allocation (a base address of ``mem_alloc_async``, or of ``mem_alloc`` of DEVICE
    memory) in ``queue``'s order: once the work enqueued on ``queue`` before it has finished
    (``cuMemFreeAsync``, ``hipFreeAsync``). The core has already taken the range out of every
    check and out of its map, and comes at once, not once the device is idle: the driver's pool
    may hand the memory to a later ``mem_alloc_async`` on ``queue`` before the free runs."""


def mem_register(device: NativeDevice, address: int, size: int, lock: bool) -> int:
    """Register (and, if ``lock``, page-lock) host memory; return the pinned address.

    Called once per range: the core counts users, refuses partial overlaps and never registers a
    range inside one it already registered."""


def mem_unregister(device: NativeDevice, address: int, size: int, unlock: bool) -> None:
    """Undo the ``mem_register`` of exactly ``[address, address + size)``, when its last user is
    gone. ``unlock``: the range was registered with ``lock`` and ``UNLOCK_MEMORY`` was asked."""


def data_submit(device: NativeDevice, dst: int, src: int, size: int, queue: NativeQueue | None) -> None:
    """Copy ``size`` bytes from host memory ``src`` to device memory ``dst``, in ``queue``'s order
    (None: done on return). The host bytes may be read at enqueue (a remote device sends them
    with the request) or when the copy runs: the caller leaves them unchanged until the queue has
    passed the copy. On a host device both are host memory: the core hands it the synchronous
    host-to-host copies of 4 MiB or more."""


def data_retrieve(device: NativeDevice, dst: int, src: int, size: int, queue: NativeQueue | None) -> None:
    """Copy ``size`` bytes from device memory ``src`` to host memory ``dst``, in ``queue``'s order
    (None: done on return). Host ``dst`` is written after the queue's earlier work and before its
    later work (a host function enqueued next reads the bytes) and before ``synchronize`` or the
    ``sync_event`` of a later event returns."""


def data_exchange(
    src_device: NativeDevice, src: int, dst_device: NativeDevice, dst: int, size: int, queue: NativeQueue | None
) -> None:
    """Copy between two devices of this backend. If absent, the core bounces through host memory."""


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


def data_fill(device: NativeDevice, address: int, pattern: bytes, size: int, queue: NativeQueue | None) -> None:
    """Fill ``size`` bytes at ``address`` with ``pattern`` repeated, in ``queue``'s order if given
    (``Capabilities.queued_fill``). ``pattern`` is ``bytes`` of any length from 1 up (liboffload's
    tests use 3 and 17), ``size`` a multiple of it, at least it; ``address`` has no alignment
    promised. A driver whose fill takes only some lengths (CUDA's cuMemsetD8/16/32; OpenCL's powers
    of two up to 128, aligned) serves the others itself (expanding the pattern and copying)."""


# --- queues ----------------------------------------------------------------------------------


def create_queue(device: NativeDevice) -> NativeQueue:
    """Create an in-order queue and return it as an opaque ``queue`` (driver streams are worth
    reusing: ``offload.backend.support.ResourcePool``)."""


def synchronize(device: NativeDevice, queue: NativeQueue, release: bool) -> None:
    """Block until ``queue`` has no pending work, then raise its asynchronous errors, if any (one
    exception, or an ``ExceptionGroup`` of all of them: each is kept).

    With ``release`` the queue is finished: free it (no thread of it may outlive this call); without
    it the queue stays usable (the core uses that before reusing a parked queue). ``release`` may
    come from a host function running on the queue itself (the final ``olShutDown`` called there):
    then drop the work queued behind that function without waiting for it, and let the queue's
    thread end once the function returns (``backend_support.HostFunctions.synchronize``).
    """


def has_pending_work(device: NativeDevice, queue: NativeQueue) -> bool:
    """Whether ``queue`` has work queued or running; True while that cannot be known yet. Must not
    block: the core polls it (``olMemFree``, ``olDestroyProgram``, interpreter exit) to wait for a
    queue it does not own without enqueuing anything on it or taking its errors. When it can never
    be known (the device is lost) raise ``OffloadError(BACKEND_FAILURE)`` instead: the poll ends
    with that error."""


def enqueue_host_call(device: NativeDevice, queue: NativeQueue, callback: Callable[[], None]) -> None:
    """Run ``callback()`` in queue order: after all earlier work, before all later work. An exception
    from it is an asynchronous error of the queue (kept in order: ``backend_support.KeptErrors``).
    A ``HostCopy`` callback (a queued host-to-host ``olMemcpy``) may instead be made as the backend's
    own queued ``memmove(callback.dst, callback.src, callback.size)``."""


# --- events ----------------------------------------------------------------------------------


def create_event(device: NativeDevice, queue: NativeQueue) -> NativeEvent:
    """Create and record an event on ``queue``: complete once all earlier work is. Return it."""


def destroy_event(device: NativeDevice, event: NativeEvent) -> None:
    """Release an event."""


def wait_event(device: NativeDevice, queue: NativeQueue, event: NativeEvent) -> None:
    """Make later work on ``queue`` wait until ``event`` (of any queue of this backend) is complete."""


def is_event_complete(device: NativeDevice, event: NativeEvent) -> bool:
    """Whether ``event`` is complete. Must not block."""


def sync_event(device: NativeDevice, event: NativeEvent, queue: NativeQueue | None) -> None:
    """Block until ``event`` is complete, then raise the asynchronous errors of the work recorded
    before it on ``queue`` (the queue it was recorded on; None once that queue was destroyed, whose
    errors then go to the final ``olShutDown``), as ``synchronize`` would: those errors, every one
    in order. Whether ``synchronize`` raises them again is the backend's (the kit accepts both)."""


def event_elapsed_time(device: NativeDevice, start: NativeEvent, end: NativeEvent) -> float:
    """Milliseconds between two complete events of this device."""


# --- native entry points (optional: the compiled data path) -----------------------------------


def native_entry_points(device: NativeDevice) -> NativeEntryPoints | None:
    """A PyCapsule named ``"offload.native_entry_points"`` holding a ``const
    offload_native_entry_points *`` (``offload/include/offload_native.h``, which states every
    obligation): C functions the core's compiled path calls, without the GIL, instead of the
    Python hooks ``launch_kernel``, ``data_submit``, ``data_retrieve``, ``data_exchange``,
    ``synchronize`` and ``has_pending_work``. An entry point either makes the operation or defers,
    having done nothing, to the Python hook. None: this device has none (the same as absent)."""


def native_word(device: NativeDevice, native: NativeDevice | NativeQueue | NativeKernel) -> int | None:
    """The pointer-sized word the native entry points take for ``native`` (this device itself, one
    of its queues or kernels), valid until that object is released; None: calls with it use the
    Python hooks. Asked once per object."""
