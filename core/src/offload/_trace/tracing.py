"""Call tracing, mirroring liboffload's ``OFFLOAD_TRACE``.

``OFFLOAD_TRACE`` (read at ``olInit``; unset, empty, ``0``, ``off``, ``false`` or ``no`` leave it
off, any other value turns it on) prints one line per call to stderr in
liboffload's format, so that C and Python traces compare line by line (addresses aside)::

    ---> olMemAlloc(.Device = 0x7f.., .Type = OL_ALLOC_TYPE_DEVICE, .Size = 0, .AllocationOut = 0x7f.. (nullptr))-> OL_ERRC_INVALID_SIZE
         *Error Details* validation failure: Size == 0 

``OFFLOAD_TRACE=json`` prints one JSON object per call instead, with the keys ``api``, ``args``,
``result``, ``details``, ``elapsed_ns`` and ``thread``. ``OFFLOAD_TRACE=perfetto`` (or
``perfetto:PATH``) prints nothing per call and writes a timeline file instead (``_timeline``).

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

Each call is one structlog event. The library never configures structlog or logging: its own
output goes through a private ``structlog.wrap_logger`` logger. An application routes the events
into its own structlog setup with ``offload.set_trace_logger(structlog.get_logger("offload"))``
(before ``olInit``): tracing is then on, and every event goes to that logger's ``info`` method with
the same keys, where the application's processors render it. ``set_trace_logger(None)`` undoes it.
"""

from __future__ import annotations

import enum
import sys
import threading
from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, NamedTuple

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
from .._core.handles import HANDLE_TYPES
from .._values.info import Kind
from .timeline import Timeline, path_from_setting
from .._values.types import Dimensions, KernelLaunchSizeArgs, buffer_size

if TYPE_CHECKING:
    from .._values.signatures import Function
    from .._values.errors import OffloadError
    from .._core.handles import Device

TRACE_ENV = "OFFLOAD_TRACE"
_app_logger: Any = None


def set_trace_logger(logger: Any) -> None:
    """Send trace events to an application's structlog logger (None: back to OFFLOAD_TRACE alone).

    Takes effect at the next fresh ``olInit``.
    """
    global _app_logger
    _app_logger = logger


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


def _pointer(value: Any) -> str:
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
            params = {param.c: _pointer(value), **params}
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
            text = _pointer(value)
        elif kind == "data":
            size = str(max(0, buffer_size(value)))
            if param.size_first:
                params[param.size_name or ""] = size
            params[param.c] = _pointer(value)
            if not param.size_first:
                params[param.size_name or ""] = size
            continue
        elif kind in ("handles", "array"):
            _array(params, param, value)
            continue
        elif kind == "events":
            try:
                events = list(value) if value is not None else []
            except TypeError:  # not a sequence: the call itself reports it
                events = []
            params[param.c] = "nullptr" if value is None else f"{_hex(value)} {{{', '.join(map(format_value, events))}}}"
            params[param.size_name or ""] = str(len(events))
            continue
        elif kind == "callback":
            text = _pointer(value)
        elif kind == "string":
            text = "nullptr" if value is None else f"{_hex(value)} ({value})"
        elif kind == "any":
            text = _pointer(value)
        else:
            text = format_value(value)
        params[param.c] = text
    params.update(tail)
    out = fn.out
    if out is not None:
        shown = format_value(result) if ok else _FAILED_OUT.get(out.kind, "nullptr")
        if out.kind == "pointer" and ok:
            shown = _pointer(result)
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
                params[out.c] = f"{address} ({address} ({_pointer(result) if ok else 'nullptr'})0x0)"
                return params
            if not ok:
                shown = _zeroed_info(fn.name, typed)
        params[out.c] = f"{_hex(out)} ({shown})"
    return params


def render_liboffload(_logger: Any, _method: str, event: dict[str, Any]) -> str:
    """structlog renderer: the event as liboffload's trace line(s)."""
    params = ", ".join(f".{name} = {value}" for name, value in event["args"].items())
    line = f"---> {event['api']}({params})-> {event['result']}"
    if event.get("details"):
        line += f"\n     *Error Details* {event['details']} "
    return line


def result_text(error: OffloadError | None) -> str:
    """A call's result as liboffload's trace prints it."""
    return "OL_SUCCESS" if error is None else f"OL_ERRC_{error.code.name}"


class TracedCall(NamedTuple):
    """One traced call, as the entry points hand it to the session's tracer."""

    fn: Function | None  # None for olInit and olShutDown, which ``api`` names
    args: tuple[Any, ...]
    result: Any
    error: OffloadError | None
    elapsed_ns: int
    api: str = ""
    final: bool = False  # the olShutDown that ended the session (the timeline writes its file then)
    level: str = "r1"  # the session's API level: the C signatures the trace spells
    closes_window: bool = False  # an olShutDown leaving only the object layer's references (the timeline writes its file)

    @property
    def name(self) -> str:
        return self.api or (self.fn.name if self.fn else "")

    def params(self) -> dict[str, str]:
        """The C parameters as liboffload prints them (none for olInit / olShutDown)."""
        fn = self.fn
        if fn is None:  # olInit / olShutDown; main's olInit takes an ol_init_args_t pointer
            if self.api == "olInit" and self.level == "main":
                return {"InitArgs": _pointer(self.args[0] if self.args else None)}
            return {}
        return trace_params(fn, self.args, self.result, self.error is None, self.level)


class Tracer:
    """Emits one structlog event per traced call."""

    __slots__ = ("_logger",)

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    def emit(self, call: TracedCall) -> None:
        try:
            params = call.params()
        except Exception as exc:  # an argument the format cannot show must not change the call's result
            params = {"<unprintable>": f"{type(exc).__name__}: {exc}"}
        error = call.error
        self._logger.info(
            call.name,
            api=call.name,
            args=params,
            result=result_text(error),
            details=None if error is None else error.details,
            elapsed_ns=call.elapsed_ns,
            thread=threading.current_thread().name,
        )


class TimelineTracer:
    """Records each traced call on a ``_timeline.Timeline``; writes it at the final ``olShutDown``
    (the caller says which one is: ``call.final``), and at the one that closes the user's window
    (``call.closes_window``) or when asked (``flush``), the session going on."""

    __slots__ = ("timeline",)

    def __init__(self, path: str, owner_of: Callable[[int], Device | None]) -> None:
        self.timeline = Timeline(path, owner_of)

    def emit(self, call: TracedCall) -> None:
        end = perf_counter_ns()
        name, error, final = call.name, call.error, call.final
        try:
            shown: dict[str, Any] = dict(call.params())
            shown["result"] = result_text(error)
            if error is not None:
                shown["details"] = error.details
            self.timeline.call(name, call.args, call.result, error is None, end - call.elapsed_ns, end, shown, final)
        except Exception as exc:  # noqa: BLE001 - the timeline never changes the call's result
            self.timeline.warn(f"could not record {name}", exc)
        if final:
            self.timeline.write()
        elif call.closes_window:
            self.timeline.flush()

    def flush(self, read_events: bool = True) -> str | None:
        """Write the file now with what is recorded so far: its path, None if nothing was written."""
        return self.timeline.path if self.timeline.flush(read_events) else None


OFF_VALUES = frozenset({"", "0", "off", "false", "no"})  # OFFLOAD_TRACE values that leave tracing off


def tracer_from_environment(
    setting: str | None, owner_of: Callable[[int], Device | None]
) -> Tracer | TimelineTracer | None:
    """The tracer for an ``OFFLOAD_TRACE`` value (None when unset, or one of ``OFF_VALUES`` in
    any case and spacing, and no app logger is set). ``owner_of``: the device owning an address
    in the session being traced (the timeline places a synchronous fill with it)."""
    if _app_logger is not None:
        return Tracer(_app_logger)
    if setting is None or setting.strip().lower() in OFF_VALUES:
        return None
    path = path_from_setting(setting)
    if path is not None:
        return TimelineTracer(path, owner_of)
    # imported here, not at the top: structlog takes ~50 ms to import, which `import offload`
    # without tracing (the common case) does not pay
    import structlog

    if setting.strip().lower() == "json":
        processors: list[Any] = [_drop_event_key, structlog.processors.JSONRenderer()]
    else:
        processors = [render_liboffload]
    logger = structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr), processors=processors, wrapper_class=structlog.BoundLogger
    )
    return Tracer(logger.bind())


def _drop_event_key(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    event.pop("event", None)
    return event
