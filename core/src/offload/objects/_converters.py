"""The converters of a kernel's arguments, one per parameter kind: a Python value into what
``struct`` packs for it, or an ``OffloadError`` (INVALID_ARGUMENT) naming the kernel's parameter.

A plain integer for a pointer is taken only as 0 (NULL) or an address the kernel's device can
reach (``olMemIsAccessible``: its allocations, a program's globals, registered or imported memory,
and on the host any mapped memory), so a size or count passed in a pointer's place is an error,
not a wild pointer in the kernel; Buffers, Arrays and ``__offload_ptr__`` objects say themselves
that they are pointers. Where a pointer's element type is known (``Pointee``), an Array of another
dtype is refused, and read-only memory is passed only to a pointer to ``const``.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from typing import Any

from .._api.flat import olMemIsAccessible
from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._values.types import KernelParam
from ._array import Array
from ._buffer import Buffer
from ._signature import POINTER_SIZE, Pointee


def fail(details: str) -> OffloadError:
    return OffloadError(ErrorCode.INVALID_ARGUMENT, details)



def param_label(kernel: str, index: int, param: KernelParam) -> str:
    name = f"{param.name!r}" if param.name else f"#{index}"
    return f"kernel {kernel!r} parameter {name} ({param.kind}{param.size * 8 if param.kind != 'bytes' else ''})"


def _address_checker(label: str, device: Any) -> Callable[[int], int]:
    """``check(address)``: a plain integer passed for a pointer, returned when it is 0 (NULL) or an
    address ``device`` can reach (``olMemIsAccessible``), else INVALID_ARGUMENT naming the parameter
    (with no device, as for a layout packed without a kernel, every address passes)."""

    def check(address: int) -> int:
        if not 0 <= address < 1 << 64:
            raise fail(f"{label}: {short(address)} is out of range")
        if address == 0 or device is None:
            return address
        try:
            reachable = olMemIsAccessible(device, address, 1)
        except OffloadError:
            reachable = False
        if not reachable:
            raise fail(
                f"{label}: got the integer {short(address)}, which is not an address of memory the device can "
                "reach (an allocation, a program's global, registered or imported memory); pass a Buffer or Array "
                "(Buffer.wrap(address, size, device, kind) for memory another library owns), or None for NULL"
            )
        return address

    return check


def pointer_converter(label: str, pointee: Pointee | None = None, device: Any = None) -> Callable[[Any], int]:
    """Buffers and Arrays of the live session (their dtype checked against a known element type,
    read-only memory only for a pointer to const), ``__offload_ptr__`` objects, None, and integers
    that are addresses ``device`` can reach (``_address_checker``)."""
    element = None if pointee is None or pointee.element is None else element_dtype(pointee.element)
    const = pointee is not None and pointee.const
    checked = _address_checker(label, device)

    def convert(value: Any) -> int:
        cls = value.__class__
        if cls is Buffer or cls is Array:
            if cls is Array and element is not None and not _same_element(value._dtype, element):
                raise fail(f"{label}: got an Array of {value._dtype}, the kernel takes {element} elements")
            buffer = value if cls is Buffer else value._buffer
            if buffer._readonly and not const:
                raise fail(f"{label}: {buffer!r} is read-only memory; the parameter is not a pointer to const")
            try:
                return value.address  # type: ignore[no-any-return]
            except OffloadError as error:  # closed, or of an ended session
                raise fail(f"{label}: {error.details}") from None
        if cls is int:
            return checked(value)
        if value is None:
            return 0
        ptr = getattr(value, "__offload_ptr__", None)
        if ptr is not None:
            try:
                return operator.index(ptr)
            except TypeError:
                raise fail(f"{label}: __offload_ptr__ of {cls.__name__} is not an int") from None
        if getattr(value, "ndim", 0) != 0 or (hasattr(value, "__dlpack__") and not hasattr(value, "__index__")):  # arrays
            raise fail(
                f"{label}: got a {cls.__name__}; pass an offload Buffer or Array "
                "(offload.to_device copies a numpy array to a device)"
            )
        try:
            address = operator.index(value)
        except TypeError:
            raise fail(f"{label}: expects a Buffer, Array or int address, got {cls.__name__}") from None
        return checked(address)

    return convert


def element_dtype(element: str) -> Any:
    import numpy  # an element type is only known for declared signatures; Arrays need numpy anyway

    return numpy.dtype(element)


def _same_element(dtype: Any, element: Any) -> bool:
    """Whether an Array's dtype is the pointer's element type (a uint8 Array fits ``bool *``)."""
    return bool(dtype == element or (element.kind == "b" and dtype.kind == "u" and dtype.itemsize == 1))


def int_converter(label: str) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if value.__class__ is int:
            return value
        try:
            return operator.index(value)
        except TypeError:
            raise fail(f"{label}: expects an integer, got {value.__class__.__name__} {short(value)}") from None

    return convert


def float_converter(label: str) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        if value.__class__ is float:
            return value
        if isinstance(value, str | bytes) or getattr(value, "ndim", False):
            raise fail(f"{label}: expects a number, got {value.__class__.__name__} {short(value)}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise fail(f"{label}: expects a number, got {value.__class__.__name__}") from None
        except OverflowError:
            raise fail(f"{label}: {short(value)} is out of range") from None

    return convert


def short(value: Any) -> str:
    """``repr(value)``, shortened (a 400-digit int names itself by its size)."""
    if value.__class__ is int and value.bit_length() > 128:
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def bytes_converter(label: str, size: int) -> Callable[[Any], bytes]:
    """An opaque parameter (an aggregate, or one whose backend reports only offset and size):
    a bytes-like value of exactly ``size`` bytes (numpy scalars are), or, for a pointer-sized one,
    a Buffer, Array or ``__offload_ptr__`` object (its address)."""
    pointer = pointer_converter(label) if size == POINTER_SIZE else None

    def convert(value: Any) -> bytes:
        if pointer is not None and (
            value.__class__.__name__ in ("Buffer", "Array") or hasattr(value, "__offload_ptr__")
        ):
            return pointer(value).to_bytes(POINTER_SIZE, sys.byteorder)
        try:
            data = memoryview(value).tobytes()
        except TypeError:
            hint = (
                "; its type is not known: pass a numpy scalar of that type, or declare the kernel's signature"
                if isinstance(value, int | float)
                else ""
            )
            raise fail(f"{label}: expects {size} bytes (a bytes-like object), got {value.__class__.__name__}{hint}") from None
        if len(data) != size:
            raise fail(f"{label}: expects {size} bytes, got {len(data)}")
        return data

    return convert
