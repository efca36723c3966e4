"""Devices that took a fault they cannot recover from, as a backend reports them.

A backend whose device stops taking work after a fault (a CUDA context after an illegal address,
the host device after a kernel's SIGSEGV) refuses every hook itself; what the core does without a
hook (host-to-host copies and fills of the device's host-visible memory) it refuses once told, by
``report_device_fault`` (re-exported by ``offload.backend_support``). The session listens
(``_runtime``); this module only carries the report down to it, so a backend imports nothing above
the values.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import OffloadError

__all__ = ["listen", "report_device_fault"]

Listener = Callable[[object, OffloadError], None]

_listener: list[Listener | None] = [None]


def listen(listener: Listener | None) -> None:
    """Make ``listener(native_device, error)`` hear every report (None: nobody listens)."""
    _listener[0] = listener


def report_device_fault(device: object, error: OffloadError) -> None:
    """Tell the core that ``device`` (the backend's own device object, as ``init`` returned it) is
    faulted until the session ends, with ``error`` (BACKEND_FAILURE, naming the fault). The core
    then refuses every copy and fill of the device's memory (its allocations and its programs'
    global variables), whichever device a call names, with an error quoting ``error``. Plain host
    memory stays usable. Idempotent; a device the current session does not know is ignored. Call
    it with the GIL held, from any thread, not from a signal handler."""
    if not isinstance(error, OffloadError):
        raise TypeError(f"report_device_fault: error must be an OffloadError, got {type(error).__name__}")
    listener = _listener[0]
    if listener is not None:
        listener(device, error)
