"""The compiled path's declared interface: everything ``_compiled._fastpath`` reads, and its version.

The C code decides nothing of its own. Every acceptance and routing rule is written once, in
Python (``_api`` and ``_core.ranges``); what the C code does is replay the *verdicts* those rules
publish here, for exactly the objects (compared by identity) and within the bounds each verdict
states, and hand every other call to the Python definition. So a change of a rule is a change of
Python alone: a verdict the new rule would not give is never published, and the C code defers.

What it reads, and nothing else:

- the fields of ``FIELDS``, per role: the classes playing a role (``configure``'s ``types``)
  declare them as slots (``_core.handles`` builds its ``__slots__`` from this table), and the
  extension finds their offsets by these names once, at ``configure``;
- the verdicts below: HOT, a list of the ranges ``_core.ranges`` last found safe, and the copy,
  fill and launch verdicts the ``publish_*`` functions hand the extension's own stores;
- ``configure``'s ``objects``: the state (the current session), HOT, and the error type and
  conversion the generated functions use.

Whether the compiled path runs at all is decided here too (``ENABLED``).

``VERSION`` changes with any of it, together with ``FP_INTERFACE_VERSION`` in ``_fastpath.h``;
``configure`` refuses another version or other fields (tests/test_compiled_interface.py compares).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

try:
    import offload._compiled._fastpath as _fastpath  # by its full name, as an extension module
except ImportError:  # built without a compiler: the pure-Python package
    _fastpath = None  # type: ignore[assignment]

__all__ = [
    "COMPILED_ENV", "ENABLED", "FIELDS", "HOT", "HOT_DEVICE", "HOT_DEVICE_READ", "HOT_READ", "HOT_WRITE", "NO_LIMIT",
    "ROUTE_EXCHANGE", "ROUTE_MEMMOVE", "ROUTE_RETRIEVE", "ROUTE_SUBMIT", "VERSION", "_fastpath", "declaration",
    "forget", "publish_fill", "publish_launch", "publish_route",
]  # (_fastpath: for _core.native, which the rest of the core asks)

#: ``OFFLOAD_COMPILED=0`` (read once, at import) keeps the pure-Python path, which is also what a
#: core without the extension runs.
COMPILED_ENV: Final = "OFFLOAD_COMPILED"
ENABLED: Final = _fastpath is not None and os.environ.get(COMPILED_ENV, "1").strip() != "0"

#: The version of this declaration; ``_fastpath.INTERFACE_VERSION`` must equal it.
VERSION: Final = 2

#: The fields the C code reads, per role (in the order of ``FP_FIELDS``).
FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "state": ("ctx", "untraced", "recorder"),  # session.STATE: the current session; it again when untraced
    "session": ("calls", "allocations", "holds"),  # the calls in flight; the allocation map; the copies' holds
    "allocation_map": ("snapshot",),  # its current snapshot: what range and copy verdicts are keyed by
    "handle": ("_ctx",),  # every handle: its session (None once destroyed)
    "device": ("backend", "native", "entry_points", "word"),
    "queue": ("device", "native", "word"),
    "symbol": ("native", "word"),
}

# --- verdicts ------------------------------------------------------------------------------------

#: HOT[slot] = (lo, hi, snapshot, device): ``_core.ranges`` found [lo, hi) safe to access as the
#: slot says in the allocation ``snapshot``, for ``device`` (None: host memory, any device).
HOT_DEVICE: Final = 0  # device memory written
HOT_READ: Final = 1  # host memory read
HOT_WRITE: Final = 2  # host memory written
HOT_DEVICE_READ: Final = 3  # device memory read
HOT: list[tuple[int, int, Any, Any]] = [(0, 0, None, None)] * 4

#: Copy routes (``olMemcpy``), published by ``_api.memory``: ``publish_route(snapshot, dst_device,
#: src_device, queue, kind, limit, dst_slot, src_slot)``: in ``snapshot``, a copy of fewer than
#: ``limit`` bytes between these devices on ``queue`` (None: synchronous) goes ``kind``, once its
#: ranges lie in HOT[dst_slot] and HOT[src_slot].
ROUTE_MEMMOVE: Final = 0  # one memmove, the GIL held (host to host)
ROUTE_SUBMIT: Final = 1  # the destination device's data_submit (its entry point first)
ROUTE_RETRIEVE: Final = 2  # the source device's data_retrieve (its entry point first)
ROUTE_EXCHANGE: Final = 3  # the source device's backend's data_exchange (its entry point first)
NO_LIMIT: Final = (1 << 64) - 1

#: Fill verdicts (``olMemFill``), published by ``_api.memory``: ``publish_fill(snapshot, queue, lo,
#: hi, device)``: in ``snapshot``, a whole-pattern fill inside [lo, hi) on ``queue`` (None:
#: synchronous) is ``device``'s data_fill.
#:
#: Launch verdicts (``olLaunchKernel``), published by ``_api.kernels``: ``publish_launch(kernel,
#: queue, device, launch, none_ok, min_args, num_groups, group_size, dyn_shared_memory, native)``:
#: this launch size object of this kernel on ``queue`` (None: synchronous) of ``device`` is
#: accepted without arguments (``none_ok``) or with a buffer of at least ``min_args`` bytes, and
#: the device's launch entry point may take it (``native``).


def _nowhere(*verdict: Any) -> None:
    """Where verdicts go without the compiled path: nothing would replay them."""


publish_route: Callable[..., None] = _fastpath.publish_route if ENABLED else _nowhere
publish_fill: Callable[..., None] = _fastpath.publish_fill if ENABLED else _nowhere
publish_launch: Callable[..., None] = _fastpath.publish_launch if ENABLED else _nowhere


def forget() -> None:
    """Drop every verdict (the session ended: no verdict may keep its handles alive)."""
    HOT[:] = [(0, 0, None, None)] * len(HOT)
    if ENABLED:
        _fastpath.forget()


def declaration() -> dict[str, Any]:
    """What ``configure`` checks against the extension's own table: the version and the fields."""
    return {"version": VERSION, "fields": FIELDS}
