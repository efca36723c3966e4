"""Call tracing, mirroring liboffload's ``OFFLOAD_TRACE``.

``OFFLOAD_TRACE`` (its presence, read at ``olInit``) prints one line per call to stderr in
liboffload's format, so that C and Python traces compare line by line (addresses aside)::

    ---> olMemAlloc(.Device = 0x7f.., .Type = OL_ALLOC_TYPE_DEVICE, .Size = 0, .AllocationOut = 0x7f.. (nullptr))-> OL_ERRC_INVALID_SIZE
         *Error Details* validation failure: Size == 0 

``OFFLOAD_TRACE=json`` prints one JSON object per call instead, with the keys ``api``, ``args``,
``result``, ``details``, ``elapsed_ns`` and ``thread``.

Each call is one structlog event. The library never configures structlog or logging: its own
output goes through a private ``structlog.wrap_logger`` logger. An application routes the events
into its own structlog setup with ``offload.set_trace_logger(structlog.get_logger("offload"))``
(before ``olInit``): tracing is then on, and every event goes to that logger's ``info`` method with
the same keys, where the application's processors render it. ``set_trace_logger(None)`` undoes it.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from ._enums import C_PREFIX, c_name
from ._handles import HANDLE_TYPES
from ._types import Dimensions, KernelLaunchSizeArgs, buffer_size

if TYPE_CHECKING:
    from ._api_table import Function
    from ._errors import OffloadError

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
        return "true" if value else "false"
    if type(value) in C_PREFIX:
        return c_name(value)
    if isinstance(value, HANDLE_TYPES):
        return _hex(value)
    if isinstance(value, Dimensions):
        return f"(struct ol_dimensions_t){{.x = {value.x}, .y = {value.y}, .z = {value.z}}}"
    if isinstance(value, KernelLaunchSizeArgs):
        return (
            f"{_hex(value)} (struct ol_kernel_launch_size_args_t){{.Dimensions = {value.dimensions}, "
            f".NumGroups = {format_value(value.num_groups)}, .GroupSize = {format_value(value.group_size)}, "
            f".DynSharedMemory = {value.dyn_shared_memory}}}"
        )
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, (int, str)):
        return str(value)
    return _hex(value)


def _pointer(value: Any) -> str:
    if value is None or (type(value) is int and value == 0):
        return "nullptr"
    return f"{value:#x}" if isinstance(value, int) else _hex(value)


def trace_params(fn: Function, args: tuple[Any, ...], result: Any, ok: bool) -> dict[str, str]:
    """The C parameter list of one call, each value formatted as liboffload prints it."""
    params: dict[str, str] = {}
    for param, value in zip(fn.params, args):
        kind = param.kind
        if kind == "pointer":
            text = _pointer(value)
        elif kind == "data":
            size = str(max(0, buffer_size(value)))
            if param.size_first:
                params[param.size_name or ""] = size
            params[param.c] = _pointer(value)
            if not param.size_first:
                params[param.size_name or ""] = size
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
    out = fn.out
    if out is not None:
        shown = format_value(result) if ok else "nullptr"
        if out.kind == "pointer" and ok:
            shown = _pointer(result)
        if out.kind == "info":
            params["PropSize"] = "0" if not ok else str(_info_size(result))
        params[out.c] = f"{_hex(out)} ({shown})"
    return params


def _info_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode()) + 1
    if isinstance(value, bool):
        return 1
    if isinstance(value, Dimensions):
        return 12
    if type(value) in C_PREFIX:
        return 4
    return 8


def render_liboffload(_logger: Any, _method: str, event: dict[str, Any]) -> str:
    """structlog renderer: the event as liboffload's trace line(s)."""
    params = ", ".join(f".{name} = {value}" for name, value in event["args"].items())
    line = f"---> {event['api']}({params})-> {event['result']}"
    if event.get("details"):
        line += f"\n     *Error Details* {event['details']} "
    return line


class Tracer:
    """Emits one structlog event per traced call."""

    __slots__ = ("_logger",)

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    def emit(self, fn: Function | None, args: tuple[Any, ...], result: Any, error: OffloadError | None, elapsed_ns: int, api: str = "") -> None:
        try:
            params = trace_params(fn, args, result, error is None) if fn is not None else {}
        except Exception as exc:  # an argument the format cannot show must not change the call's result
            params = {"<unprintable>": f"{type(exc).__name__}: {exc}"}
        self._logger.info(
            api or (fn.name if fn else ""),
            api=api or (fn.name if fn else ""),
            args=params,
            result="OL_SUCCESS" if error is None else f"OL_ERRC_{error.code.name}",
            details=None if error is None else error.details,
            elapsed_ns=elapsed_ns,
            thread=threading.current_thread().name,
        )


def tracer_from_environment(setting: str | None) -> Tracer | None:
    """The tracer for an ``OFFLOAD_TRACE`` value (None when unset and no app logger is set)."""
    if _app_logger is not None:
        return Tracer(_app_logger)
    if setting is None:
        return None
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
