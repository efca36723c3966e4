"""A GPU backend's native entry points, the Python side (for backend authors, beside
``offload.backend.support``): the optional hooks ``native_entry_points`` / ``native_word`` of
``offload.hookspecs`` over an extension module built on ``offload/include/offload_native_gpu.h``.

Such a module (offload-cuda's and offload-amdgpu's ``_native``) has ``entry_points()``, a reason
``unavailable`` (None when its driver functions bound), the record types ``DeviceRecord``,
``QueueRecord``, ``KernelRecord`` and ``host_function(callback)``. ``NativeExtension`` imports it,
keeps the reason when there are no entry points, makes the records and answers the two hooks;
``NativeHooks``, a base class of the backend, implements the hooks with the backend's ``native``.
A backend stores each record as the ``native_record`` attribute of its device, queue and kernel
object (kept alive with it, as ``native_word``'s obligation says): ``native_word`` hands the core
its ``address``, and an object without one (None) goes through the Python hooks.

Imports only the standard library and ``offload.hookspecs``: a backend may use it from any hook.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from ..hookspecs import NativeDevice, NativeEntryPoints, NativeKernel, NativeQueue, hookimpl
from .host_functions import HostFunctions

__all__ = ["NativeExtension", "NativeHooks", "NativeHostFunctions"]

Q = TypeVar("Q")

log = logging.getLogger("offload.native_support")  # the name before the move (logging configurations use it)


class NativeExtension:
    """The native entry-point module ``name`` of a backend, or why there is none (``reason``).

    Import it only once the driver is loaded: the module imports the driver bindings' C API
    (``cuda.bindings.cydriver``, ``rocm.bindings.cyhip``) and checks every capsule's signature.
    Not built (no C compiler at install time), or a capsule missing or with another signature:
    ``module`` is None, ``reason`` says why (logged at INFO) and every record is None, so the core
    calls the Python hooks.
    """

    __slots__ = ("module", "reason")

    def __init__(self, name: str) -> None:
        self.module: Any = None
        self.reason: str | None = None
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            self.reason = f"{name} is not built ({exc})"
        else:
            why = getattr(module, "unavailable", "it has no 'unavailable' attribute")
            if why is None:
                self.module = module
            else:
                self.reason = f"{name} has no entry points: {why}"
        if self.reason is not None:
            log.info("%s; the Python hooks serve", self.reason)

    def entry_points(self) -> Any:
        """The ``native_entry_points`` hook's answer: the capsule, or None."""
        return None if self.module is None else self.module.entry_points()

    @staticmethod
    def word(native: Any) -> int | None:
        """The ``native_word`` hook's answer: the address of ``native.native_record``, or None."""
        record = getattr(native, "native_record", None)
        return None if record is None else int(record.address)

    def device_record(self, context: int, ordinal: int, select: bool) -> Any:
        """A device's record (``context``: CUDA's primary context; ``select``: HIP's
        ``hipSetDevice`` before synchronous work), or None without entry points."""
        return None if self.module is None else self.module.DeviceRecord(context, ordinal, int(select))

    def queue_record(self, stream: Any) -> Any:
        """A queue's record (its stream), or None without entry points."""
        return None if self.module is None else self.module.QueueRecord(int(stream))

    def kernel_record(self, function: Any, extent: int, dyn_limit: int) -> Any:
        """A kernel's record: its function, the argument bytes the driver is given
        (``backend_support.launch_extent``) and the dynamic shared memory it is set up for (the
        backend raises ``record.dyn_limit`` with the kernel's own); None without entry points."""
        return None if self.module is None else self.module.KernelRecord(int(function), extent, dyn_limit)

    def host_call(self, queue: Any, callback: Callable[[], None]) -> Callable[[], None]:
        """``callback`` as a backend enqueues it on ``queue`` (``enqueue_host_call``): the queue's
        record marked (``python_work``: its synchronize and has_pending_work stay with the Python
        hooks, which run the work host functions defer and raise the errors they keep), and the
        callback run with its thread marked (no entry point calls the driver from a host function)."""
        record = getattr(queue, "native_record", None)
        if record is None:
            return callback
        record.python_work = 1
        return functools.partial(self.module.host_function, callback)


class NativeHostFunctions(HostFunctions):
    """``HostFunctions`` of a backend with native entry points (``native``): ``enqueue`` marks the
    queue's record first (``NativeExtension.host_call``). The backend subclasses it with its
    driver's ``launch_host_function``, as ``HostFunctions`` says; ``driver`` is its driver module."""

    def __init__(self, name: str, driver: Any, native: NativeExtension) -> None:
        super().__init__(name)
        self.driver = driver
        self.native = native

    def enqueue(self, queue: Any, callback: Callable[[], None]) -> None:
        """``HostFunctions.enqueue`` of ``callback`` as ``native.host_call`` hands it."""
        super().enqueue(queue, self.native.host_call(queue, callback))


class NativeHooks:
    """A base class of a backend whose ``native`` is a ``NativeExtension`` (None before ``init``):
    the hookimpls ``native_entry_points`` and ``native_word`` on it, and ``with_queue_record``
    for its ``create_queue`` and ``adopt_stream``."""

    native: NativeExtension | None = None

    def with_queue_record(self, queue: Q) -> Q:
        """``queue`` (a new one, with a ``stream``) given its record (``native_record``; it keeps
        None without entry points)."""
        if self.native is not None:
            target: Any = queue
            target.native_record = self.native.queue_record(target.stream)
        return queue

    @hookimpl
    def native_entry_points(self, device: NativeDevice) -> NativeEntryPoints | None:
        """The extension's capsule, or None (not built, or the bindings' C API differs:
        ``self.native.reason``)."""
        return None if self.native is None else NativeEntryPoints(self.native.entry_points())

    @hookimpl
    def native_word(self, device: NativeDevice, native: NativeDevice | NativeQueue | NativeKernel) -> int | None:
        """The address of the device's, queue's or kernel's record (kept alive with it), or None."""
        return NativeExtension.word(native)
