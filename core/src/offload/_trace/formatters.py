"""Per-function trace formatters, made once per (function, API level) from the table: what
``params.trace_params`` returns, with its per-call decisions taken when the formatter is made
(which parameters the level shows and where the Context goes, each enumeration's C enum, an info
query's property table, the out-parameter's form and address) and exact-type fast paths for the
common values (handles, enum members, ints, strings), every other value going through ``params``'
own functions. ``tests/test_trace_formatters.py`` checks them against ``trace_params`` for every
function of the table.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core.handles import HANDLE_TYPES
from .._values import info as _info
from .._values.enums import c_name
from .._values.info import Kind
from .._values.types import KernelLaunchSizeArgs, buffer_size
from .params import (
    _FAILED_OUT,
    _INFO_TABLES,
    ENUM_PARAMS,
    UNKNOWN_ENUMERATOR,
    _array,
    _kernel_args_main,
    _prop_type,
    _zeroed_info,
    format_enum,
    format_value,
    pointer_text,
    trace_params,
)

if TYPE_CHECKING:
    from .._values.signatures import Function, Param

Formatter = Callable[[tuple[Any, ...], Any, bool], dict[str, str]]
TextFormatter = Callable[[tuple[Any, ...], Any, bool], str]
Value = Callable[[Any], str]  # one parameter's text, from the call's arguments
Multi = Callable[[Any, dict[str, str]], None]  # several parameters' (a buffer and its size, an array ...)
OutStep = Callable[[Any, Any, bool], tuple["str | None", str]]  # (PropSize or None, the out-parameter)

_HANDLES = frozenset(HANDLE_TYPES)
_last_launch: tuple[Any, str] = (None, "")  # the last KernelLaunchSizeArgs printed, and its text
_NAMES: dict[type[Any], dict[int, str]] = {}  # enum class -> id(member) -> its C name (an Enum's hash is Python code: ids are cheap)
_CACHE: dict[tuple[str, str], Formatter] = {}
TEXT_FORMATTERS: dict[str, dict[str, TextFormatter]] = {}  # level -> function name -> (two string lookups a call)


def formatter(fn: Function, level: str) -> Formatter:
    """``fn``'s formatter at API ``level``: ``(args, result, ok) -> trace_params(fn, args, result, ok, level)``."""
    made = _CACHE.get((fn.name, level))
    if made is None:
        made = _CACHE[(fn.name, level)] = _make(fn, level)
    return made


def text_formatter(fn: Function, level: str) -> TextFormatter:
    """``fn``'s parameter list as the trace line prints it: ``.Name = value, ...`` of ``formatter``'s dict."""
    by_name = TEXT_FORMATTERS.get(level)
    if by_name is None:
        by_name = TEXT_FORMATTERS.setdefault(level, {})
    made = by_name.get(fn.name)
    if made is None:
        made = by_name[fn.name] = _make_text(fn, level)
    return made


def join(params: dict[str, str]) -> str:
    """A parameter dict as the trace line prints it."""
    return ", ".join([f".{name} = {value}" for name, value in params.items()])


def value_text(value: Any) -> str:
    """``format_value`` with the common exact types first."""
    kind = type(value)
    if kind in _HANDLES:
        return hex(id(value))
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return str(value)
    if kind is KernelLaunchSizeArgs:  # immutable, and usually the same one launch after launch
        global _last_launch
        last = _last_launch
        if last[0] is value:
            return last[1]
        text = format_value(value)
        _last_launch = (value, text)
        return text
    return format_value(value)


def _names(cls: type[Any]) -> dict[int, str]:
    return _NAMES.setdefault(cls, {id(member): c_name(member) for member in cls})


def _step(fn: Function, param: Param, index: int, main: bool, level: str) -> Value | Multi:
    """One parameter's step: a Value (its one key, ``param.c``) or a Multi (its keys written)."""
    c, kind = param.c, param.kind
    if kind == "kernel_args" and main:
        return lambda args, out: out.update(_kernel_args_main(args[index]))
    if kind in ("data", "kernel_args"):
        size_name, first = param.size_name or "", param.size_first

        def data(args: Any, out: dict[str, str]) -> None:
            value = args[index]
            size = str(max(0, buffer_size(value)))
            if first:
                out[size_name] = size
            out[c] = pointer_text(value)
            if not first:
                out[size_name] = size

        return data
    if kind in ("handles", "array", "events"):
        return lambda args, out: _array(out, param, args[index])
    if kind == "enum":
        cls = ENUM_PARAMS.get((fn.name, c))
        zero = param.optional and cls is not None
        names = _names(cls) if cls is not None and not issubclass(cls, enum.IntFlag) else {}

        def enumeration(args: Any) -> str:
            value = args[index]
            if type(value) is cls:
                return names.get(id(value)) or format_enum(cls, value, level)
            if value is None and zero:
                value = 0
            return format_enum(cls, value, level)

        return enumeration
    if kind in ("pointer", "callback", "any", "context"):
        pointer: Value = lambda args: pointer_text(args[index])  # noqa: E731
        _INDEX[pointer], _KIND[pointer] = index, "pointer"
        return pointer
    if kind == "string":
        return lambda args: "nullptr" if args[index] is None else f"{hex(id(args[index]))} ({args[index]})"
    value: Value = lambda args: value_text(args[index])  # noqa: E731
    _INDEX[value], _KIND[value] = index, "value"
    return value


_MULTI = frozenset({"data", "kernel_args", "events", "handles", "array"})
_INDEX: dict[Any, int] = {}  # a Value step -> the argument it formats (for the text formatter's inlining)
_KIND: dict[Any, str] = {}  # a Value step -> "value" (value_text of it) or "pointer" (pointer_text of it)


def _plan(fn: Function, level: str) -> tuple[list[tuple[str | None, Any]], OutStep | None]:
    """The steps in the order their keys print ((key, Value), or (None, Multi)), and the out step."""
    main = level == "main"
    context: list[tuple[str | None, Any]] = []  # shown first
    steps: list[tuple[str | None, Any]] = []
    tail: list[tuple[str | None, Any]] = []  # main's kernel arguments: after the others
    last_enum, zero_last = -1, False
    for index, param in enumerate(fn.params):
        if param.level == "main" and not main:
            continue
        entry = (None if param.kind in _MULTI else param.c, _step(fn, param, index, main, level))
        if param.kind == "context":
            context.append(entry)
        elif param.kind == "kernel_args" and main:
            tail.append(entry)
        else:
            steps.append(entry)
        if param.kind == "enum":
            last_enum, zero_last = index, param.optional and ENUM_PARAMS.get((fn.name, param.c)) is not None
    # (trace_params puts each context first: the last one wins the place)
    return context[-1:] + steps + tail, _out_step(fn, level, last_enum, zero_last)


def _make(fn: Function, level: str) -> Formatter:
    plan, out_step = _plan(fn, level)
    count = len(fn.params)
    out_c = fn.out.c if fn.out is not None else ""

    def format_call(args: tuple[Any, ...], result: Any, ok: bool) -> dict[str, str]:
        if len(args) != count:  # (the entry points pass every parameter: anything else, the general way)
            return trace_params(fn, args, result, ok, level)
        params: dict[str, str] = {}
        for key, step in plan:
            if key is None:
                step(args, params)
            else:
                params[key] = step(args)
        if out_step is not None:
            size, shown = out_step(args, result, ok)
            if size is not None:
                params["PropSize"] = size
            params[out_c] = shown
        return params

    return format_call


def _make_text(fn: Function, level: str) -> TextFormatter:
    """Python source made for ``fn`` (run once): the line's text as one expression of the
    arguments, a handle's or an enum member's text inline, every other value through its step."""
    plan, out_step = _plan(fn, level)
    env: dict[str, Any] = {"H": _HANDLES, "vt": value_text, "pt": pointer_text, "join": join, "general": trace_params, "fn": fn, "level": level}
    pieces: list[str] = []
    for i, (key, step) in enumerate(plan):
        env[f"s{i}"] = step
        if key is None:  # several keys: made into a dict and joined (an empty one prints nothing)
            pieces.append(f"m(s{i}, args)")
            continue
        index = _INDEX.get(step)
        if index is not None and _KIND.get(step) == "value":
            expr = f"(hex(id(a{index})) if type(a{index}) in H else vt(a{index}))"
        elif index is not None and _KIND.get(step) == "pointer":
            expr = f"pt(a{index})"
        else:
            expr = f"s{i}(args)"
        pieces.append(f"'.{key} = ' + {expr}")
    out_line = ""
    if out_step is not None and fn.out is not None:
        env["out"] = out_step
        if fn.out.kind == "info":  # (PropSize, then the value)
            out_line = "    size, shown = out(args, result, ok)\n"
            pieces += ["'.PropSize = ' + size", f"'.{fn.out.c} = ' + shown"]
        else:
            pieces.append(f"'.{fn.out.c} = ' + out(args, result, ok)[1]")
    env["m"] = _multi_text
    names = ", ".join(f"a{i}" for i in range(len(fn.params))) + ("," if len(fn.params) == 1 else "")
    unpack = f"    {names} = args\n" if fn.params else ""
    body = " + ', ' + ".join(pieces) if pieces else "''"
    if any(p.startswith("m(") for p in pieces):  # an empty multi must not leave its ", "
        body = "', '.join([x for x in (" + ", ".join(pieces) + ",) if x])"
    source = (
        "def format_text(args, result, ok):\n"
        f"    if len(args) != {len(fn.params)}:\n"
        "        return join(general(fn, args, result, ok, level))\n"
        f"{unpack}{out_line}    return {body}\n"
    )
    exec(compile(source, f"<trace formatter {fn.name} {level}>", "exec"), env)  # noqa: S102 - our own source, from the table
    return env["format_text"]  # type: ignore[no-any-return]


def _multi_text(step: Multi, args: Any) -> str:
    some: dict[str, str] = {}
    step(args, some)
    return join(some)


def _size_of(kind: Kind | None) -> Callable[[Any], str]:
    """The PropSize text of a succeeded query's value of ``kind`` (None: no such property, "0")."""
    if kind is None:
        return lambda value: "0"
    if kind is Kind.STRING:
        return lambda value: str(len(str(value).encode()) + 1)
    if kind is Kind.HANDLES:
        return lambda value: str(8 * len(value))
    try:
        fixed = str(_info.c_size(kind, None))
    except (KeyError, TypeError):  # (no fixed size: computed per value, as c_size does)
        return lambda value: str(_info.c_size(kind, value))
    return lambda value: fixed


def _out_step(fn: Function, level: str, last_enum: int, zero_last: bool) -> OutStep | None:
    out = fn.out
    if out is None:
        return None
    kind, address = out.kind, hex(id(out))
    if kind != "info":
        failed = _FAILED_OUT.get(kind, "nullptr")
        shown_ok = pointer_text if kind == "pointer" else value_text
        return lambda args, result, ok: (None, f"{address} ({shown_ok(result) if ok else failed})")
    table = _INFO_TABLES.get(fn.name)
    enum_type = ENUM_PARAMS.get((fn.name, "PropName"))
    prop_param = fn.params[last_enum] if last_enum >= 0 else None

    members: dict[int, tuple[Any, bool, Callable[[Any], str]]] = {}  # id(member) -> (typed, a pointer value?, its PropSize)
    for member in enum_type or ():
        typed = table.get(member) if table is not None else None
        value_kind = typed[0] if typed is not None else None
        members[id(member)] = (typed, value_kind is Kind.POINTER, _size_of(value_kind))

    def info(args: Any, result: Any, ok: bool) -> tuple[str | None, str]:
        prop = args[last_enum] if last_enum >= 0 else None
        if type(prop) is enum_type:  # a member: never an unknown enumerator
            typed, pointer, size_of = members[id(prop)]
            size = size_of(result) if ok else "0"
            if pointer:
                return size, f"{address} ({address} ({pointer_text(result) if ok else 'nullptr'})0x0)"
            if ok:
                return size, f"{address} ({value_text(result)})"
            return size, f"{address} ({_zeroed_info(fn.name, typed)})"
        cls = ENUM_PARAMS.get((fn.name, prop_param.c)) if prop_param is not None else None
        unknown = prop_param is not None and format_enum(cls, 0 if prop is None and zero_last else prop, level) == UNKNOWN_ENUMERATOR
        if prop is None and zero_last:
            prop = 0
        typed = _prop_type(fn.name, prop, level)
        size = str(_info.c_size(typed[0], result)) if ok and typed is not None else "0"
        if unknown:
            return size, UNKNOWN_ENUMERATOR
        if typed is not None and typed[0] is Kind.POINTER:
            return size, f"{address} ({address} ({pointer_text(result) if ok else 'nullptr'})0x0)"
        if ok:
            return size, f"{address} ({value_text(result)})"
        return size, f"{address} ({_zeroed_info(fn.name, typed)})"

    return info
