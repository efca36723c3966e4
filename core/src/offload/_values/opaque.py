"""The opaque values a backend hands the core (published as ``offload.hookspecs``' names).

The core never looks inside them: it keeps what a hook returned and passes it back, unchanged, to
the same backend's later hooks. Each is a distinct type to a type checker, so the core cannot pass
a queue where a device is expected; a backend annotates its hookimpls with its own concrete types
(pluggy matches hooks by argument name only) or with these names where it keeps a value opaque,
wrapping once (``NativeQueue(stream)``, free at run time) where it hands one back.
"""

from __future__ import annotations

from typing import NewType

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

__all__ = ["NativeDevice", "NativeQueue", "NativeEvent", "NativeProgram", "NativeKernel", "NativeEntryPoints"]
