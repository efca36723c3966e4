"""Declared kernel signatures: C parameter declarations (``"float a, const float *x, float *y,
uint64_t n"``, parsed by ``_cdecl`` with C's rules), or a sequence whose items are C types or
type names (``"float32"``, ``"unsigned char"``, ``"const float *"``, ``"pointer"``), numpy dtypes,
``(name, type)`` pairs, or ``KernelParam`` (an explicit offset), laid out with natural alignment
as a C compiler lays out the kernel's argument struct; INVALID_ARGUMENT naming the parameter for
anything else. A declared signature is merged with the layout the backend reports
(``merged_params``, ``reported_pointees``): where they disagree, INVALID_ARGUMENT names the parameter."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._values.types import KernelParam
from ._cdecl import CParam, CSyntaxError, UnknownType, parse_param, parse_signature
from ._params import checked_params

POINTER_SIZE = struct.calcsize("P")

_NUMPY_KINDS = {"i": "int", "u": "uint", "f": "float", "b": "uint"}


@dataclass(frozen=True)
class Pointee:
    """What a pointer parameter points to, where the kernel's types are known: ``element`` the
    numpy name of the element type (None: untyped), ``const`` whether the kernel only reads it."""

    element: str | None
    const: bool


def _fail(details: str) -> OffloadError:
    return OffloadError(ErrorCode.INVALID_ARGUMENT, details)


def _scalar(spec: Any, where: str) -> CParam:
    """One declared type: a C type (``"const float *"``), a type name, or a numpy dtype / scalar type."""
    if isinstance(spec, str):
        if spec.strip() in ("pointer", "ptr"):
            return CParam("", "pointer", POINTER_SIZE)
        try:
            parsed = parse_param(spec)
        except (CSyntaxError, UnknownType) as error:
            failure = f"syntax error in {spec!r}: {error}" if isinstance(error, CSyntaxError) else str(error)
            if "*" in spec or " " in spec.strip():
                raise _fail(f"{where}: {failure}") from None
            return _numpy_scalar(spec, f"{where}: {failure}")
        if parsed.name:
            raise _fail(f"{where}: {spec!r} names a parameter; give (name, type) or only the type")
        return parsed
    return _numpy_scalar(spec, f"{where}: unknown parameter type {spec!r}")


def _numpy_scalar(spec: Any, failure: str) -> CParam:
    """A numpy dtype (or its string) as a scalar parameter, INVALID_ARGUMENT ``failure`` otherwise."""
    try:
        import numpy  # only for a dtype given as a signature item (the core imports without numpy)

        dtype = numpy.dtype(spec)
    except Exception:
        dtype = None
    if dtype is not None and dtype.kind in _NUMPY_KINDS and dtype.itemsize in (1, 2, 4, 8) and dtype.isnative:
        return CParam("", _NUMPY_KINDS[dtype.kind], dtype.itemsize)
    raise _fail(failure)


def declared_signature(signature: str | Sequence[Any], where: str) -> tuple[tuple[KernelParam, ...], tuple[Pointee | None, ...]]:
    """The C layout of a declared signature (natural alignment), and what each pointer points to."""
    entries: list[Any]
    if isinstance(signature, str):
        try:
            entries = [(c.name, c) for _, c in parse_signature(signature)]
        except (CSyntaxError, UnknownType) as error:
            raise _fail(f"{where} {signature!r}: {error}") from None
    else:
        entries = list(signature)
    params: list[KernelParam] = []
    pointees: list[Pointee | None] = []
    offset = 0
    for i, entry in enumerate(entries):
        if isinstance(entry, KernelParam):
            params.append(entry)
            pointees.append(None)
            offset = entry.offset + entry.size
            continue
        name, spec = entry if isinstance(entry, tuple) and len(entry) == 2 else ("", entry)
        parsed = spec if isinstance(spec, CParam) else _scalar(spec, f"{where}: parameter #{i} {name}".rstrip())
        size = parsed.size
        offset = (offset + size - 1) // size * size
        params.append(KernelParam(offset, size, parsed.kind, str(name)))
        pointees.append(Pointee(parsed.element, parsed.const_element) if parsed.kind == "pointer" else None)
        offset += size
    return checked_params(params, where), tuple(pointees)


def declared_params(signature: str | Sequence[Any], where: str) -> tuple[KernelParam, ...]:
    """The C layout of a declared signature (natural alignment)."""
    return declared_signature(signature, where)[0]


def merged_params(name: str, reported: Sequence[KernelParam], declared: Sequence[KernelParam]) -> tuple[KernelParam, ...]:
    """The declared parameters where they agree with the reported layout (a declared kind refines
    a reported ``bytes``; a reported name fills a declared blank); INVALID_ARGUMENT naming the
    first parameter that disagrees."""
    if len(reported) != len(declared):
        raise OffloadError(
            ErrorCode.INVALID_ARGUMENT,
            f"kernel {name!r}: the declared signature has {len(declared)} parameters, the backend reports {len(reported)}",
        )
    merged = []
    for i, (r, d) in enumerate(zip(reported, declared)):
        if (r.offset, r.size) != (d.offset, d.size) or (r.kind != "bytes" and d.kind != r.kind):
            label = r.name or d.name or f"#{i}"
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT,
                f"kernel {name!r} parameter {label!r}: declared {d.kind}{d.size * 8} at offset {d.offset}, "
                f"the backend reports {r.kind}{r.size * 8} at offset {r.offset}",
            )
        merged.append(KernelParam(d.offset, d.size, d.kind, r.name or d.name))
    return tuple(merged)


def reported_pointees(
    name: str, reported: Sequence[KernelParam], declared: tuple[Pointee | None, ...]
) -> tuple[Pointee | None, ...]:
    """What each pointer points to: the declared signature's word where it has one, else the
    backend's; a declared element type that contradicts the backend's is INVALID_ARGUMENT."""
    pointees: list[Pointee | None] = []
    for i, r in enumerate(reported):
        mine = declared[i] if i < len(declared) else None
        if r.element is None or r.kind != "pointer":
            pointees.append(mine)
        elif mine is None or mine.element is None:
            pointees.append(Pointee(r.element, r.const or (mine is not None and mine.const)))
        elif mine.element != r.element:
            raise OffloadError(
                ErrorCode.INVALID_ARGUMENT,
                f"kernel {name!r} parameter {r.name or f'#{i}'!r}: declared a pointer to {mine.element}, "
                f"the backend reports a pointer to {r.element}",
            )
        else:
            pointees.append(mine)
    return tuple(pointees)
