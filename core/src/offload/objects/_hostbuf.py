"""The address of any buffer-protocol object (bytes, bytearray, memoryview, numpy arrays, ...).

``host_span(obj, writable)`` returns ``(address, nbytes, keepalive)``: ``keepalive`` is a
``memoryview`` holding the object's buffer export, so the memory stays put while it lives
(numpy cannot resize an array with an export). Only C-contiguous memory is accepted.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from ._records import buffer_address

PyBUF_WRITABLE = 0x0001
PyBUF_ND = 0x0008
PyBUF_STRIDES = 0x0010 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x0020 | PyBUF_STRIDES


# A ``Py_buffer`` as storage: ``buf`` (the address) is its first field; the rest, eleven fields
# of at most a pointer's size, only PyObject_GetBuffer and PyBuffer_Release read.
_PyBuffer = ctypes.c_void_p * 11


_get_buffer = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, _PyBuffer, ctypes.c_int)(
    ("PyObject_GetBuffer", ctypes.pythonapi)
)
_release_buffer = ctypes.PYFUNCTYPE(None, _PyBuffer)(("PyBuffer_Release", ctypes.pythonapi))


def host_span(obj: Any, writable: bool, what: str) -> tuple[int, int, memoryview]:
    """``(address, nbytes, keepalive)`` of a C-contiguous buffer-protocol object."""
    try:
        view = obj if type(obj) is memoryview else memoryview(obj)
    except (TypeError, ValueError):  # ValueError: numpy dtypes without a buffer format (datetime64)
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT, f"{what} must support the buffer protocol, got {type(obj).__name__}"
        ) from None
    if not view.c_contiguous:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what} must be C-contiguous")
    if writable and view.readonly:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what} is read-only")
    if view.nbytes == 0:
        return 0, 0, view
    try:
        address = _address(view)
    except BufferError as error:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{what}: {error}") from None
    return address, view.nbytes, view


def _ctypes_address(view: memoryview) -> int:
    """The address of ``view``'s C-contiguous export through ctypes (~1 us; the C one: ~50 ns)."""
    raw = _PyBuffer()
    _get_buffer(view, raw, PyBUF_C_CONTIGUOUS)
    address: int = raw[0] or 0
    _release_buffer(raw)
    return address


_address: Callable[[memoryview], int] = buffer_address if buffer_address is not None else _ctypes_address
