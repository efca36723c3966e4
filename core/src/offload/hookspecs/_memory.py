"""The contract's memory hooks: allocations, registrations and the data hooks (copies, fills)
(``offload.hookspecs`` re-exports them)."""

from __future__ import annotations

from .._values.enums import AllocType, MemMigrationFlag
from .._values.opaque import NativeDevice, NativeQueue
from ._markers import hookspec


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
