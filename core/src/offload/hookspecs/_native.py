"""The contract's optional native entry points, the compiled data path (``offload.hookspecs``
re-exports them; ``offload/include/offload_native.h`` states every obligation)."""

from __future__ import annotations

from .._values.opaque import NativeDevice, NativeEntryPoints, NativeKernel, NativeQueue
from ._markers import hookspec


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
