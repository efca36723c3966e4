"""The compiled common copies (``offload.objects._copier``, issue 18): ``Buffer.copy_from``,
``Buffer.copy_to``, ``Array.copy_from`` and ``Queue.copy`` become C methods that make the copy
their Python method's common case makes (``_buffer.fast_copy``: two live Buffers, or C-contiguous
Arrays, of the current session, in bounds, into writable memory) with one call of the flat
``olMemcpy``, and call the Python method for every other call, which checks and names it
(``_copier.c``). Their ``counts`` ({'fast', 'deferred'}) say which ran.

It runs where the compiled path does (``_api.sessions.compiled_path_runs``: ``offload._compiled._fastpath`` built and
``OFFLOAD_COMPILED`` not ``0``) and the extension was built (``core/setup.py``: optional); else
the methods stay the Python functions, which make the same copy in one Python frame."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .._api.sessions import compiled_path_runs as ENABLED

try:
    import offload.objects._copier as _copier  # (by its full name: an extension module)
except ImportError:  # built without a compiler: the Python methods
    _copier = None  # type: ignore[assignment]

ACTIVE = ENABLED and _copier is not None

# which method a Copier is (_copier.c's kinds; unused where the methods stay Python)
if ACTIVE:
    BUFFER_COPY_FROM, BUFFER_COPY_TO = _copier.BUFFER_COPY_FROM, _copier.BUFFER_COPY_TO
    ARRAY_COPY_FROM, QUEUE_COPY = _copier.ARRAY_COPY_FROM, _copier.QUEUE_COPY
else:
    BUFFER_COPY_FROM, BUFFER_COPY_TO, ARRAY_COPY_FROM, QUEUE_COPY = range(4)

#: the address of a buffer export in C where the compiled copies run (``_hostbuf``); else None
buffer_address: Callable[[object], int] | None = _copier.buffer_address if ACTIVE else None

F = TypeVar("F", bound=Callable[..., Any])


def copying(kind: int) -> Callable[[F], F]:
    """A decorator: the method as a ``Copier`` of ``kind`` (which of the four methods it is, by its
    arguments) when ``ACTIVE``, else the method itself."""

    def wrap(method: F) -> F:
        if not ACTIVE:
            return method
        return _copier.Copier(method, kind)  # type: ignore[return-value]  # (called, named as the method)

    return wrap


def configure(buffer: type, array: type, queue: type, device: type, session_cell: object, memcpy: Callable[..., Any]) -> None:
    """Tell the Copiers the classes whose slots they read, the session cell (``_sessions.session_cell()``)
    and the flat ``olMemcpy`` that ``fast_copy`` calls (until then they call the Python methods)."""
    if ACTIVE:
        _copier.configure(buffer, array, queue, device, session_cell, memcpy)
