"""The backend contract: the hooks a backend implements and what the core promises them.

A backend is an object whose methods, marked ``offload.hookimpl``, are named after the hooks
here, published under the entry-point group ``offload.backends`` (the entry-point name is the
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
  queued one is an ``enqueue_host_call`` on the queue whose callback is a ``HostCopy``
  (``offload.backend.support``: a backend may make that copy itself, in queue order). It calls each
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

The hooks are written by section in two modules, ``_device`` (lifecycle, programs and symbols,
programs from source, other libraries' streams) and ``_data`` (memory, queues, events, native
entry points), marked ``hookspec`` and re-exported here: ``offload.hookspecs`` is the one import
path, and ``HOOK_NAMES`` lists them in that order.

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

from types import FunctionType

import pluggy

# the hooks' value types, importable from here as before (noqa: the sections use them)
from .._values.enums import AllocType, DeviceInfo, MemMigrationFlag, PlatformInfo, SymbolKind  # noqa: F401
from .._values.info import DEVICE_INFO_TYPES
from .._values.opaque import NativeDevice, NativeEntryPoints, NativeEvent, NativeKernel, NativeProgram, NativeQueue
from .._values.types import KernelLaunchSizeArgs, KernelParam  # noqa: F401
from . import _data, _device
# lifecycle
from ._device import init, served_hooks, no_devices_reason, platform_info, deinit, deinit_device, get_device_info
# programs and symbols; programs from source
from ._device import (
    is_valid_binary, load_binary, unload_binary, get_kernel, get_global, kernel_params, max_group_size,
    launch_kernel, launch_kernel_cooperative, max_cooperative_groups, symbol_names, build_target, build_source,
)
# other libraries' streams
from ._device import foreign_stream_wait, foreign_stream_sync, queue_stream, adopt_stream
# memory
from ._data import (
    mem_alloc_aligned, mem_prefetch, mem_alloc, mem_free, mem_alloc_async, mem_free_async, mem_register,
    mem_unregister, data_submit, data_retrieve, data_exchange, data_copy_rect, data_fill,
)
# queues; events
from ._data import (
    create_queue, synchronize, has_pending_work, enqueue_host_call, create_event, destroy_event, wait_event,
    is_event_complete, sync_event, event_elapsed_time,
)
# native entry points
from ._data import native_entry_points, native_word

#: The project of the markers: ``hookspec`` marks the hooks below, ``hookimpl`` a backend's
#: implementations (the entry-point group ``offload.backends`` has its prefix).
PROJECT = "offload"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

REQUIRED_HOOKS = frozenset(
    {"init", "deinit", "get_device_info", "load_binary", "unload_binary", "synchronize", "has_pending_work"}
)

#: Every hook, in the order of the sections: each function their modules define.
HOOK_NAMES: tuple[str, ...] = tuple(
    name
    for section in (_device, _data)
    for name, value in vars(section).items()
    if isinstance(value, FunctionType) and value.__module__ == section.__name__
)
for _name in HOOK_NAMES:  # each marked as the contract's hook specification (pluggy reads the mark)
    hookspec(globals()[_name])
del _name

__all__ = [
    "hookimpl", "hookspec", "DEVICE_INFO_TYPES", "HOOK_NAMES", "REQUIRED_HOOKS", "PROJECT",
    "NativeDevice", "NativeQueue", "NativeEvent", "NativeProgram", "NativeKernel", "NativeEntryPoints",
    # the hooks, section by section
    "init", "served_hooks", "no_devices_reason", "platform_info", "deinit", "deinit_device", "get_device_info",
    "is_valid_binary", "load_binary", "unload_binary", "get_kernel", "get_global", "kernel_params",
    "max_group_size", "launch_kernel", "launch_kernel_cooperative", "max_cooperative_groups", "symbol_names",
    "build_target", "build_source",
    "foreign_stream_wait", "foreign_stream_sync", "queue_stream", "adopt_stream",
    "mem_alloc_aligned", "mem_prefetch", "mem_alloc", "mem_free", "mem_alloc_async", "mem_free_async",
    "mem_register", "mem_unregister", "data_submit", "data_retrieve", "data_exchange", "data_copy_rect",
    "data_fill",
    "create_queue", "synchronize", "has_pending_work", "enqueue_host_call", "create_event", "destroy_event",
    "wait_event", "is_event_complete", "sync_event", "event_elapsed_time",
    "native_entry_points", "native_word",
]  # fmt: skip
