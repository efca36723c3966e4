"""The layer's classes that a lower module makes but cannot import.

Imports in ``offload.objects`` flow one way: ``_discovery`` (devices) at the bottom, then
``_buffer`` (memory, taking a Device), then ``_array`` (typed views made of Buffers), ``_queue``
and ``_program`` above. Three public methods make objects of a class above them: ``Device.alloc``
(a Buffer), ``Device.queue``, ``Device.load_program``, and ``Buffer.view`` / ``Buffer.__dlpack__``
(an Array); a copy also tells Arrays from other sources. Those methods find the class here:
``objects/__init__`` registers each one (``register``) once its module is imported, before any
object can be made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._array import Array
    from ._buffer import Buffer
    from ._program import Program
    from ._queue import Queue


class Makers:
    """The registered classes (read them as attributes: ``MAKERS.array``)."""

    __slots__ = ("buffer", "array", "queue", "program")

    buffer: type[Buffer]
    array: type[Array]
    queue: type[Queue]
    program: type[Program]


MAKERS = Makers()


def register(*, buffer: type[Buffer], array: type[Array], queue: type[Queue], program: type[Program]) -> None:
    """Record the classes the lower modules make (called once, by ``objects/__init__``)."""
    MAKERS.buffer = buffer
    MAKERS.array = array
    MAKERS.queue = queue
    MAKERS.program = program
