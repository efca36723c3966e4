"""The source of every generated ol* function, from ``_api_table`` (liboffload's EntryPointGen).

``sources`` writes each table function as Python source: a ``_body_<name>`` (conversions,
validation, handle liveness, the implementation call) and the public ``<name>`` that inlines the
same body behind one read of the runtime state. ``_entrypoints`` compiles and binds them. This
module needs nothing but the table, so the build compiles the same sources ahead of time
(``core/setup.py``, through ``_codecache.store``).
"""

from __future__ import annotations

from .._values.signatures import _NO_DEFAULT, Function, Param
from .table import FUNCTIONS
from .._values.enums import ErrorCode

__all__ = ["sources"]


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
