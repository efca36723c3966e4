"""The shape of one ol* function's declaration in the table (``_api.table``): its parameters,
validation conditions and out-parameter. Data only: the table fills it, ``_api.codegen`` writes
Python from it, ``_trace.tracing`` formats calls by it and ``_api.stubgen`` types it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .enums import ErrorCode

_NO_DEFAULT: Any = object()


class Param(NamedTuple):
    """One parameter: Python name, C name, kind, and (for handles) the handle class.

    Kinds: ``handle``; ``context`` (liboffload main's optional leading Context: last in the
    Python signature, default None, and also accepted first, in C order, when its value is a
    Context handle; traced first, at API level main only); ``pointer`` (an int address, NULL is 0
    or None); ``data`` (bytes-like, traced as a pointer followed or preceded by its C size
    parameter ``size_name``); ``callback``; ``events`` / ``handles`` / ``array`` (a sequence,
    traced as a C array with ``size_name``); ``enum``; ``size``; ``struct`` (a value type);
    ``string``; ``any`` (user data); ``kernel_args`` (olLaunchKernel's packed buffer or
    per-argument values). ``level``: the API level whose C signature has it ("main": traced at
    main only; None: both).
    """

    py: str
    c: str
    kind: str
    handle: type | None = None
    optional: bool = False
    default: Any = _NO_DEFAULT
    size_name: str | None = None
    size_first: bool = False
    level: str | None = None


class Check(NamedTuple):
    """A ``.td`` validation condition: the C text (for the message) and the Python test."""

    code: ErrorCode
    c_text: str
    py_expr: str


class Out(NamedTuple):
    """The out-parameter that the Python function returns. ``info`` adds a PropSize before it."""

    c: str
    kind: str  # "handle", "pointer", "size", "bool", "info", "float"


class Function(NamedTuple):
    name: str
    params: tuple[Param, ...]
    doc: str
    checks: tuple[Check, ...] = ()
    out: Out | None = None
    # the parameter whose value the call registers in ``ctx.calls`` while it runs (default: the
    # function's name); olLaunchKernel registers its kernel, which olDestroyProgram waits on
    registers: str | None = None
    # Python lines run first in the entry point (before any conversion or check): olLaunchKernel's
    # acceptance of main's argument order
    prologue: tuple[str, ...] = ()
