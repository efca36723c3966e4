"""What a layer built over the flat API (``offload.objects``) needs from the core beyond it.

The flat API (``_api.flat``) is the layer's way in: it makes and destroys handles and moves data.
Three questions it cannot answer are answered here, and nothing else of the core's state is the
layer's to read:

- which ``olInit`` session is current (``current_session``, or ``session_cell().ctx``): a layer holding objects across
  sessions must tell whether a handle or an allocation it made still belongs to the live one;
- which session a handle belongs to (``session_of``): None once the handle was destroyed or its
  session ended, so a finalizer never destroys a handle twice or one of another session;
- the parameters a kernel's backend reported (``kernel_parameters``), which the core asked once
  at ``olGetSymbol``, and the backend a handle belongs to (``backend_name``), to name it in errors.

One thing it tells the core: which of its ``olInit`` / ``olShutDown`` calls take or drop the
layer's own references (made inside ``library_reference()``), so that the user's last
``olShutDown`` is known as such while the layer keeps the session open (a timeline is written then).
One thing the core tells it: that a session ends (``on_session_end``), however it was ended, even
by more ``olShutDown`` calls than ``olInit`` calls under the layer's own reference.

Two facts of the process it may read: whether the compiled path runs (``compiled_path_runs``:
the layer's own C methods run only with it) and which device this rank of a distributed job
takes (``spread_over_ranks``, from what the launcher set).

Memory and streams of other libraries (DLPack, ``__cuda_array_interface__``) go through the doors
of ``_core.foreign`` and ``streams``, re-exported here for the layer: ``register_foreign_memory`` (an
import's device range, copyable for its lifetime), ``foreign_stream_wait``, ``foreign_stream_sync``,
``queue_stream`` (a queue's driver stream) and ``adopt_stream`` (a queue over another library's).

A ``Session`` is opaque: compare sessions with ``is`` only; holding one keeps nothing alive and
says nothing about whether it is still current. Handles keep their read-only descriptive fields
(``Device.platform``, ``.index``, ``.is_host``; ``Platform.name``, ``.kind``, ``.devices``;
``Queue.id``; ``Program.data``), which the layer may read; every other attribute is the core's.
"""

from __future__ import annotations

from typing import Protocol, TypeAlias

from .._core import native as _native
from .._core.foreign import ForeignMemory, foreign_stream_sync, foreign_stream_wait, register_foreign_memory
from .streams import adopt_stream, queue_stream
from .._core.handles import Context as ContextHandle
from .._core.handles import Device, Event, Platform, Program, Queue, Symbol
from .._core.session import STATE, Session, library_reference, on_session_end
from .._core.ranks import spread as spread_over_ranks
from .._values.types import KernelParam

__all__ = [
    "ForeignMemory", "Session", "adopt_stream", "backend_name", "compiled_path_runs", "current_session",
    "foreign_stream_sync", "foreign_stream_wait", "kernel_parameters", "library_reference", "on_session_end", "queue_stream",
    "register_foreign_memory", "session_cell", "session_of", "spread_over_ranks",
]  # fmt: skip

compiled_path_runs: bool = _native.ENABLED
"""Whether the compiled path runs in this process (``OFFLOAD_COMPILED``, the extension built)."""

Handle: TypeAlias = Platform | Device | ContextHandle | Queue | Event | Program | Symbol


def current_session() -> Session | None:
    """The live session, or None before the first ``olInit`` and after the final ``olShutDown``."""
    return STATE.ctx


class SessionCell(Protocol):
    """Read-only: ``ctx`` is always the live session (what ``current_session()`` returns)."""

    @property
    def ctx(self) -> Session | None: ...


def session_cell() -> SessionCell:
    """The object whose ``ctx`` attribute reads the live session: for generated code on a hot path,
    where one attribute read per argument costs less than a call of ``current_session``."""
    return STATE


def session_of(handle: Handle) -> Session | None:
    """The session ``handle`` belongs to, or None once it was destroyed or its session ended."""
    session = handle._ctx
    return session if isinstance(session, Session) else None


def kernel_parameters(kernel: Symbol) -> tuple[KernelParam, ...] | None:
    """The kernel's parameters as its backend's ``kernel_params`` reported them (offsets and sizes
    checked by the core), or None when the backend cannot tell (or has no such hook)."""
    return kernel.params


def backend_name(handle: Device | Symbol) -> str:
    """The name of the backend (its platform's name) that a device or kernel belongs to."""
    device = handle.program.device if isinstance(handle, Symbol) else handle
    return device.platform.name
