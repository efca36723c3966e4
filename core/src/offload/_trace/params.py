"""How a traced call's parameters print: liboffload's trace format (``OFFLOAD_TRACE``), per
parameter of the function's declaration (``_values.signatures``).

Fidelity with liboffload's printer (checked against LLVM 22's library by the golden test): an
enumeration parameter prints by the parameter's C enum whatever Python value was passed, and as
``unknown enumerator`` when the number is none of its enumerators (so does the ``PropValue`` of an
info query with such a ``PropName``); an out-parameter of a failed call prints as a zeroed C
variable would (``0`` for sizes and booleans, ``nullptr`` for pointers and handles; an info
value by its type: ``0``, an empty string, ``0x0`` for a handle, the enum's 0 enumerator);
booleans print as ``0``/``1`` and a ``LaunchSizeArgs`` struct in parentheses after its address.
A bit field (``ol_*_flags_t``, a ``uint32_t`` typedef in C) prints as its number, argument or
info value (``SINGLE_FP_CONFIG``: ``(127)``). A ``void *`` info value (``OL_MEM_INFO_BASE``,
``OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS``) prints as LLVM's printer prints it:
``0xBUF (0xBUF (0xVALUE)0x0)``, ``(nullptr)`` inside when failed (its ``printPtr`` result, a NULL
``ol_result_t``, is streamed too). Python has no ``PropSize`` argument: the trace shows the C
size of the property's type (``olGet*InfoSize``'s answer; 0 on failure).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from .._core.handles import HANDLE_TYPES
from .._values import info as _info
from .._values.enums import (
    C_PREFIX,
    AllocType,
    ContextInfo,
    DeviceInfo,
    EventFlags,
    EventInfo,
    MemInfo,
    MemMigrationFlag,
    MemoryRegisterFlag,
    PlatformInfo,
    QueueInfo,
    SymbolInfo,
    SymbolKind,
    c_name,
    from_c,
)
from .._values.info import Kind
from .._values.types import Dimensions, KernelLaunchSizeArgs, buffer_size

if TYPE_CHECKING:
    from .._values.signatures import Function


def _hex(value: Any) -> str:
    return f"{id(value):#x}"


def format_value(value: Any) -> str:
    """A value as liboffload's PrintGen prints it."""
    if value is None:
        return "nullptr"
    if isinstance(value, bool):
        return "1" if value else "0"  # raw_ostream prints a bool as an int
    if type(value) in C_PREFIX:  # a bit field is its uint32 typedef in C: printed as the number
        return str(int(value)) if isinstance(value, enum.IntFlag) else c_name(value)
    if isinstance(value, HANDLE_TYPES):
        return _hex(value)
    if isinstance(value, Dimensions):
        return f"(struct ol_dimensions_t){{.x = {value.x}, .y = {value.y}, .z = {value.z}}}"
    if isinstance(value, KernelLaunchSizeArgs):
        return (
            f"{_hex(value)} ((struct ol_kernel_launch_size_args_t){{.Dimensions = {value.dimensions}, "
            f".NumGroups = {format_value(value.num_groups)}, .GroupSize = {format_value(value.group_size)}, "
            f".DynSharedMemory = {value.dyn_shared_memory}}})"
        )
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, (int, str)):
        return str(value)
    return _hex(value)


UNKNOWN_ENUMERATOR = "unknown enumerator"

# The C enum of every enumeration parameter, keyed by (function, C parameter name).
ENUM_PARAMS: dict[tuple[str, str], type[Any]] = {
    ("olMemAlloc", "Type"): AllocType,
    ("olGetSymbol", "Kind"): SymbolKind,
    ("olMemRegister", "Flags"): MemoryRegisterFlag,
    ("olMemUnregister", "Flags"): MemoryRegisterFlag,
    ("olMemAllocAligned", "Type"): AllocType,
    ("olCreateEvent", "Flags"): EventFlags,
    ("olMemPrefetch", "Flags"): MemMigrationFlag,
    ("olIterateSymbols", "Kind"): SymbolKind,
}
for _prefix, _enum in (
    ("Platform", PlatformInfo),
    ("Device", DeviceInfo),
    ("Mem", MemInfo),
    ("Queue", QueueInfo),
    ("Event", EventInfo),
    ("Symbol", SymbolInfo),
    ("Context", ContextInfo),
):
    ENUM_PARAMS[(f"olGet{_prefix}Info", "PropName")] = _enum
    ENUM_PARAMS[(f"olGet{_prefix}InfoSize", "PropName")] = _enum
_FAILED_OUT = {"size": "0", "bool": "0"}  # a failed call's out-parameter, as its zeroed C variable prints
_INFO_TABLES: dict[str, dict[Any, tuple[Kind, Any]]] = {
    "olGetPlatformInfo": _info.PLATFORM_INFO,
    "olGetDeviceInfo": _info.DEVICE_INFO,
    "olGetMemInfo": _info.MEM_INFO,
    "olGetQueueInfo": _info.QUEUE_INFO,
    "olGetEventInfo": _info.EVENT_INFO,
    "olGetSymbolInfo": _info.SYMBOL_INFO,
    "olGetContextInfo": _info.CONTEXT_INFO,
}
_UNTYPED_ENUM_VALUES = {"olGetSymbolInfo": SymbolKind}  # OL_SYMBOL_INFO_KIND is the only enum there


def _prop_type(fn_name: str, prop: Any, level: str) -> tuple[Kind, Any] | None:
    """The (kind, value enum) of the property an info query's ``PropName`` names (None: none)."""
    table = _INFO_TABLES.get(fn_name)
    enum_type = ENUM_PARAMS.get((fn_name, "PropName"))
    try:
        member = prop if type(prop) is enum_type else from_c(enum_type, int(prop), level)  # type: ignore[arg-type]
        return table[member]  # type: ignore[index]
    except (KeyError, ValueError, TypeError):
        return None


def _zeroed_info(fn_name: str, typed: tuple[Kind, Any] | None) -> str:
    """What liboffload prints for the PropValue of a failed query: the zeroed buffer, by type."""
    if typed is None:
        return "nullptr"
    kind, value_enum = typed
    if kind is Kind.STRING:
        return ""
    if kind in (Kind.HANDLE, Kind.HANDLES):
        return "0x0"
    if kind is Kind.ENUM:
        return format_enum(value_enum or _UNTYPED_ENUM_VALUES.get(fn_name), 0)
    if kind is Kind.DIMENSIONS:
        return "(struct ol_dimensions_t){.x = 0, .y = 0, .z = 0}"
    if kind in (Kind.U32, Kind.U64, Kind.SIZE, Kind.BOOL):
        return "0"
    return "nullptr"


def format_enum(cls: type[Any] | None, value: Any, level: str = "r1") -> str:
    """An enumeration argument as liboffload prints it: by the parameter's C enum (a number read
    at API ``level``); a bit field (``cls`` an IntFlag: a ``uint32_t`` typedef in C) as its number."""
    if cls is None or isinstance(value, bool) or not isinstance(value, int):
        return format_value(value)
    if issubclass(cls, enum.IntFlag):  # a bit-field parameter's C type is a uint32_t typedef
        return str(int(value))
    if type(value) is cls:
        return c_name(value)
    number = int(value)
    try:
        return c_name(from_c(cls, number, level))
    except ValueError:
        return UNKNOWN_ENUMERATOR


def pointer_text(value: Any) -> str:
    if value is None or (type(value) is int and value == 0):
        return "nullptr"
    return f"{value:#x}" if isinstance(value, int) else _hex(value)


def _array(params: dict[str, str], param: Any, value: Any) -> None:
    """A sequence argument as a C array: its address, its items, and its size parameter."""
    try:
        items = list(value) if value is not None else []
    except TypeError:  # not a sequence: the call itself reports it
        items = []
    if param.size_name and param.size_first:
        params[param.size_name] = str(len(items))
    params[param.c] = "nullptr" if value is None else f"{_hex(value)} {{{', '.join(map(format_value, items))}}}"
    if param.size_name and not param.size_first:
        params[param.size_name] = str(len(items))


def _kernel_args_main(value: Any) -> dict[str, str]:
    """olLaunchKernel's arguments as main's NumArgs, ArgPtrs, ArgSizes (a packed buffer is one)."""
    if value is None:
        return {"NumArgs": "0", "ArgPtrs": "nullptr", "ArgSizes": "nullptr"}
    size = buffer_size(value)
    items = [value] if size >= 0 else list(value)
    sizes = [str(max(0, buffer_size(v))) for v in items]
    return {
        "NumArgs": str(len(items)),
        "ArgPtrs": f"{_hex(items)} {{{', '.join(_hex(v) for v in items)}}}",
        "ArgSizes": f"{_hex(sizes)} {{{', '.join(sizes)}}}",
    }


def trace_params(fn: Function, args: tuple[Any, ...], result: Any, ok: bool, level: str = "r1") -> dict[str, str]:
    """The C parameter list of one call at API ``level``, each value formatted as liboffload prints
    it (at ``main``: the Context first, main's added parameters, the kernel arguments per argument)."""
    params: dict[str, str] = {}
    unknown_prop = False
    prop: Any = None
    main = level == "main"
    tail: dict[str, str] = {}
    for param, value in zip(fn.params, args):
        kind = param.kind
        if param.level == "main" and not main:
            continue
        if kind == "context":
            params = {param.c: pointer_text(value), **params}
            continue
        if kind == "kernel_args":
            if main:
                tail = _kernel_args_main(value)
                continue
            kind = "data"
        if kind == "enum":
            cls = ENUM_PARAMS.get((fn.name, param.c))
            if value is None and param.optional and cls is not None:  # omitted: C passes 0
                value = 0
            text = format_enum(cls, value, level)
            unknown_prop = text == UNKNOWN_ENUMERATOR
            prop = value
        elif kind == "pointer":
            text = pointer_text(value)
        elif kind == "data":
            size = str(max(0, buffer_size(value)))
            if param.size_first:
                params[param.size_name or ""] = size
            params[param.c] = pointer_text(value)
            if not param.size_first:
                params[param.size_name or ""] = size
            continue
        elif kind in ("handles", "array", "events"):
            _array(params, param, value)
            continue
        elif kind == "callback":
            text = pointer_text(value)
        elif kind == "string":
            text = "nullptr" if value is None else f"{_hex(value)} ({value})"
        elif kind == "any":
            text = pointer_text(value)
        else:
            text = format_value(value)
        params[param.c] = text
    params.update(tail)
    out = fn.out
    if out is not None:
        shown = format_value(result) if ok else _FAILED_OUT.get(out.kind, "nullptr")
        if out.kind == "pointer" and ok:
            shown = pointer_text(result)
        if out.kind == "info":
            typed = _prop_type(fn.name, prop, level)
            params["PropSize"] = str(_info.c_size(typed[0], result)) if ok and typed is not None else "0"
            if unknown_prop:
                params[out.c] = UNKNOWN_ENUMERATOR
                return params
            if typed is not None and typed[0] is Kind.POINTER:
                # a void * value: LLVM's printer streams printPtr's own result (OL_SUCCESS, a NULL
                # pointer: "0x0") after the pointer it printed, inside the parentheses
                address = _hex(out)
                params[out.c] = f"{address} ({address} ({pointer_text(result) if ok else 'nullptr'})0x0)"
                return params
            if not ok:
                shown = _zeroed_info(fn.name, typed)
        params[out.c] = f"{_hex(out)} ({shown})"
    return params
