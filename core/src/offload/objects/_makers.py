"""The layer's classes that a lower module makes but cannot import.

Imports in ``offload.objects`` flow one way: ``_discovery`` (devices) at the bottom, then
``_context`` (contexts of devices), ``_buffer`` (memory, taking a Device and a Context), then
``_array`` (typed views made of Buffers), ``_queue`` and ``_program`` above. Public methods make
objects of a class above them: ``Platform.default_context`` (a Context), ``Device.alloc`` (a
Buffer), ``Device.queue``, ``Device.load_program``, the factories of ``Context`` (Buffers, Arrays,
queues, programs), and ``Buffer.view`` / ``Buffer.__dlpack__`` (an Array); a copy also tells Arrays
from other sources. Those methods find the class (or function) here:
``objects/__init__`` registers each one (``register``) once its module is imported, before any
object can be made.
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
    """The registered classes (read them as attributes: ``MAKERS.array``)."""

    __slots__ = ("context", "buffer", "array", "queue", "program", "empty", "to_device")

    context: type[Context]
    buffer: type[Buffer]
    array: type[Array]
    queue: type[Queue]
    program: type[Program]
    empty: Callable[..., Array]
    to_device: Callable[..., Array]


MAKERS = Makers()


def register(
    *, context: type[Context], buffer: type[Buffer], array: type[Array], queue: type[Queue], program: type[Program],
    empty: Callable[..., Array], to_device: Callable[..., Array],
) -> None:
    """Record the classes (and Array constructors) the lower modules make (called once, by ``objects/__init__``)."""
    MAKERS.context = context
    MAKERS.empty = empty
    MAKERS.to_device = to_device
    MAKERS.buffer = buffer
    MAKERS.array = array
    MAKERS.queue = queue
    MAKERS.program = program
