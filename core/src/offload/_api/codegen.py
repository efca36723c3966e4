"""The source of every generated ol* function, from ``_api.table`` (liboffload's EntryPointGen).

``sources`` writes each table function as Python source: a ``_body_<name>`` (conversions,
validation, handle liveness, the implementation call) and the public ``<name>`` that inlines the
same body behind one read of the session state. ``module_source`` puts them in one module,
checked in as ``_api/generated.py`` (``_api.functions`` binds its functions), so that Python's
bytecode cache keeps them and tracebacks show their lines. This module needs nothing but the
table::

    python -m offload._api.codegen            # rewrite core/src/offload/_api/generated.py
    python -m offload._api.codegen --check    # exit 1 if the file differs from what the table gives

``tests/test_generated.py`` fails when the file drifts from the table.
"""

from __future__ import annotations

import pathlib
import sys

from .._values.signatures import _NO_DEFAULT, Function, Param
from .table import FUNCTIONS
from .._values.enums import ErrorCode

__all__ = ["GENERATED_PATH", "module_source", "sources"]

GENERATED_PATH = pathlib.Path(__file__).with_name("generated.py")


def _is_null_condition(param: Param) -> str:
    if param.kind == "pointer":
        return f"{param.py} is None or {param.py} == 0"
    return f"{param.py} is None"


def _body_lines(fn: Function) -> list[str]:
    """Validation, liveness checks and the implementation call (indented for a function body)."""
    lines = []
    for p in fn.params:  # numbers of other types become ints first, so checks see ints only
        if p.kind == "pointer":
            lines.append(f"    if {p.py}.__class__ is not int and {p.py} is not None:")
            # the original (a Buffer, say) stays referenced until the call returns: a temporary
            # passed straight in must not be collected, and its memory freed, under the call
            lines.append(f"        _held_{p.py} = {p.py}")
            lines.append(f"        {p.py} = _as_address({p.py}, {p.c!r})")
        elif p.kind == "size":
            lines.append(f"    if {p.py}.__class__ is not int:")
            lines.append(f"        {p.py} = _as_size({p.py}, {p.c!r})")
    checks = [(c.code, c.c_text, c.py_expr) for c in fn.checks]
    checks += [
        (ErrorCode.INVALID_NULL_HANDLE, f"NULL == {p.c}", f"{p.py} is None")
        for p in fn.params
        if p.kind == "handle" and not p.optional
    ]
    checks += [
        (ErrorCode.INVALID_NULL_POINTER, f"NULL == {p.c}", _is_null_condition(p))
        for p in fn.params
        if p.kind in ("pointer", "data", "callback", "events", "handles", "struct", "string") and not p.optional
    ]
    if checks:
        lines.append("    if ctx.validate:")
        for code, c_text, py_expr in checks:
            lines.append(f"        if {py_expr}:")
            lines.append(f"            raise _OffloadError({int(code)}, {'validation failure: ' + c_text!r})")
    for p in fn.params:
        if p.kind not in ("handle", "context"):
            continue
        cls = p.handle.__name__  # type: ignore[union-attr]
        test = f"{p.py}.__class__ is not _{cls} or {p.py}._ctx is not ctx"
        if p.optional:
            test = f"{p.py} is not None and ({test})"
        lines.append(f"    if {test}:")
        lines.append(f"        raise _stale({p.py}, _{cls}, {p.c!r})")
    call_args = ", ".join(["ctx"] + [p.py for p in fn.params])
    entry = repr(fn.name) if fn.registers is None else fn.registers
    lines += [
        "    calls = ctx.calls",
        f"    calls.append({entry})",
        "    try:",
        "        if _STATE.ctx is not ctx:",
        "            raise _uninitialized()",
        f"        return _impl_{fn.name}({call_args})",
        "    except _OffloadError:",
        "        raise",
        "    except Exception as exc:",
        f"        raise _as_offload_error(exc, {fn.name!r}) from exc",
        "    finally:",
        f"        calls.remove({entry})",
    ]
    return lines


def _signature(fn: Function) -> str:
    parts = []
    for p in fn.params:
        parts.append(p.py if p.default is _NO_DEFAULT else f"{p.py}=None")
    return ", ".join(parts)


def _prologue(fn: Function) -> list[str]:
    """The table's prologue, and for a function with a trailing ``context`` parameter the C order
    (the Context first) accepted too: one class test on the first argument."""
    lines = list(fn.prologue)
    names = [p.py for p in fn.params]
    if fn.params and fn.params[-1].kind == "context" and len(names) > 1:
        rotated = names[1:] + names[:1]
        lines.append(f"    if {names[0]}.__class__ is _Context:")
        lines.append(f"        {', '.join(names)} = {', '.join(rotated)}")
    return lines


def _source(fn: Function, trace: bool) -> str:
    args = ", ".join(p.py for p in fn.params)
    body = _body_lines(fn)
    lines = [f"def _body_{fn.name}(ctx, {args}):", *body, ""]
    lines.append(f"def {fn.name}({_signature(fn)}):")
    lines += _prologue(fn)
    if trace:  # tracing costs the untraced path nothing: STATE.untraced is None while it is on
        lines += [
            "    ctx = _STATE.untraced",
            "    if ctx is None:",
            "        ctx = _STATE.ctx",
            "        if ctx is None:",
            "            raise _uninitialized()",
            "        if ctx.trace:",
            f"            return _traced(ctx, _FN_{fn.name}, _body_{fn.name}, ({args},))",
            f"        return _body_{fn.name}(ctx, {args})",
        ]
    else:
        lines += [
            "    ctx = _STATE.ctx",
            "    if ctx is None:",
            "        raise _uninitialized()",
        ]
    lines += body
    return "\n".join(lines) + "\n"


def sources(trace: bool = True) -> dict[str, tuple[str, str]]:
    """``{name: (source, filename)}`` of every table function; ``trace=False`` leaves the tracing
    test out (benchmarks)."""
    return {fn.name: (_source(fn, trace), f"<offload entry point {fn.name}>") for fn in FUNCTIONS}


_HEADER = '''"""The public ol* functions, one per ``_api.table`` entry (GENERATED by ``python -m
offload._api.codegen`` from the table; do not edit). ``_api.functions`` binds them as
``offload.<name>``; ``_api.codegen`` says what each holds.
"""
# mypy: ignore-errors
# fmt: off

from .._core.handles import Context as _Context
from .._core.handles import Device as _Device
from .._core.handles import Event as _Event
from .._core.handles import Platform as _Platform
from .._core.handles import Program as _Program
from .._core.handles import Queue as _Queue
from .._core.handles import Symbol as _Symbol
from .._core.ranges import as_address as _as_address
from .._core.ranges import as_size as _as_size
from .._core.session import STATE as _STATE
from .._core.session import uninitialized as _uninitialized
from .._values.errors import OffloadError as _OffloadError
from .._values.errors import as_offload_error as _as_offload_error
from .._values.types import KernelLaunchSizeArgs as _KernelLaunchSizeArgs
from .._values.types import buffer_size as _nbytes
from .binding import FUNCTION as _FUNCTION
from .binding import count as _count
from .binding import stale as _stale
from .binding import traced as _traced
from .binding import zero_extent as _zero_extent
from .implementations import implementation as _implementation
'''


def module_source() -> str:
    """The text of ``_api/generated.py``: every table function (tracing included), after the
    names they read (their implementation and table entry bound once, by name)."""
    parts = [_HEADER]
    for fn in FUNCTIONS:
        parts.append(
            f"\n\n# --- {fn.name} ---\n\n_impl_{fn.name} = _implementation({fn.name!r})\n_FN_{fn.name} = _FUNCTION[{fn.name!r}]\n\n\n"
            + _source(fn, True).replace("\n\ndef ", "\n\n\ndef ")
        )
    return "".join(parts)


def write_or_check(argv: list[str], default: pathlib.Path, text: str, command: str) -> int:
    """A generator's command line: write ``text`` to the path in ``argv`` (``default``), or with
    ``--check`` exit 1 where that file differs from it (``command`` rewrites it)."""
    check = "--check" in argv
    paths = [a for a in argv if not a.startswith("--")]
    path = pathlib.Path(paths[0]) if paths else default
    if check:
        current = path.read_text() if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0


def main(argv: list[str]) -> int:
    return write_or_check(argv, GENERATED_PATH, module_source(), "python -m offload._api.codegen")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
