"""The classes that a class below them makes: the object layer's one late binding.

The layer's public API refers both ways: ``Device.alloc`` makes a Buffer and ``Buffer.device``
is a Device; ``Platform.default_context`` makes a Context over the platform's devices;
``Device.queue``, ``Device.load_program`` and the factories of ``Context`` make Queues, Programs,
Buffers and Arrays; ``Buffer.view`` makes an Array of a Buffer; ``_copies`` tells Buffers and
Arrays among a copy's operands. Each such class (or Array constructor) is defined above the
module that makes it, so that module finds it here, never by importing upward: the module that
defines it enters it in ``MAKERS`` (``MAKERS.buffer = Buffer`` is the last line of ``_buffer``), and ``offload.objects`` imports every module before any object can be made.
Nothing else of the layer is bound late: what a lower module only reads of a higher object it
types by a protocol (``_memory.BufferLike``) or the object's record (``_records.QueueRecord``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._array import Array
    from ._buffer import Buffer
    from ._context import Context
    from ._program import Program
    from ._queue import Queue


class Makers:
    """The entered classes and constructors (read them as attributes: ``MAKERS.array``)."""

    __slots__ = ("context", "buffer", "array", "queue", "program", "empty", "to_device")

    context: type[Context]  # _context
    buffer: type[Buffer]  # _buffer
    array: type[Array]  # _array
    queue: type[Queue]  # _queue
    program: type[Program]  # _program
    empty: Callable[..., Array]  # _creation
    to_device: Callable[..., Array]  # _creation


MAKERS = Makers()
