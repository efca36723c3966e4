"""Call tracing, mirroring liboffload's ``OFFLOAD_TRACE``.

``OFFLOAD_TRACE`` (read at ``olInit``; unset, empty, ``0``, ``off``, ``false`` or ``no`` leave it
off, any other value turns it on) prints one line per call to stderr in
liboffload's format, so that C and Python traces compare line by line (addresses aside)::

    ---> olMemAlloc(.Device = 0x7f.., .Type = OL_ALLOC_TYPE_DEVICE, .Size = 0, .AllocationOut = 0x7f.. (nullptr))-> OL_ERRC_INVALID_SIZE
         *Error Details* validation failure: Size == 0 

``OFFLOAD_TRACE=json`` prints one JSON object per call instead, with the keys ``api``, ``args``,
``result``, ``details``, ``elapsed_ns`` and ``thread``. ``OFFLOAD_TRACE=perfetto`` (or
``perfetto:PATH``) prints nothing per call and writes a timeline file instead: Perfetto's binary
trace, streamed (``timeline_stream``), or the trace-event JSON where PATH ends in ``.json``
(``timeline``).

How each parameter prints, as liboffload's printer prints it: ``params``.

Each call is one structlog event. The library never configures structlog or logging: its own
output goes through a private ``structlog.wrap_logger`` logger. An application routes the events
into its own structlog setup with ``offload.set_trace_logger(structlog.get_logger("offload"))``
(before ``olInit``): tracing is then on, and every event goes to that logger's ``info`` method with
the same keys, where the application's processors render it. ``set_trace_logger(None)`` undoes it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, MutableMapping
from threading import current_thread
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, NamedTuple

from .formatters import TEXT_FORMATTERS, formatter, join, text_formatter
from .params import pointer_text
from .timeline import Timeline
from .timeline_file import path_from_setting

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


def render_line(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> str:
    """structlog renderer of ``TextTracer``'s events: liboffload's trace line(s), newline included."""
    line = f"---> {event['event']}({event['params']})-> {event['result']}\n"
    details = event.get("details")
    return f"{line}     *Error Details* {details} \n" if details else line


class LineWriter:
    """structlog logger of ``OFFLOAD_TRACE=1`` and ``=json``: each rendered line goes to ``file`` in one ``write``
    (stderr is line-buffered: one system call a line, as the line's whole; a
    TextIOWrapper's write of one line is not interleaved with another thread's)."""

    __slots__ = ("info",)

    def __init__(self, file: Any) -> None:
        self.info = file.write


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
                return {"InitArgs": pointer_text(self.args[0] if self.args else None)}
            return {}
        return formatter(fn, self.level)(self.args, self.result, self.error is None)


class Tracer:
    """Emits one structlog event per traced call (``OFFLOAD_TRACE=json``, an application's logger)."""

    __slots__ = ("_logger",)

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    def done(self, fn: Function, args: tuple[Any, ...], result: Any, start_ns: int, end_ns: int, level: str) -> None:
        """A call of ``fn`` that succeeded (the entry points' common case)."""
        try:
            params = formatter(fn, level)(args, result, True)
        except Exception as exc:  # an argument the format cannot show must not change the call's result
            params = {"<unprintable>": f"{type(exc).__name__}: {exc}"}
        name = fn.name
        self._logger.info(
            name, api=name, args=params, result="OL_SUCCESS", details=None, elapsed_ns=end_ns - start_ns, thread=current_thread().name
        )

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
            thread=current_thread().name,
        )


class TextTracer:
    """``OFFLOAD_TRACE=1``: one structlog event per call, its parameters already the line's text
    (``formatters.text_formatter``), rendered by ``render_line`` and written by ``LineWriter``."""

    __slots__ = ("_info",)

    def __init__(self, logger: Any) -> None:
        self._info = logger.info

    def done(self, fn: Function, args: tuple[Any, ...], result: Any, start_ns: int, end_ns: int, level: str) -> None:
        """A call of ``fn`` that succeeded (the entry points' common case)."""
        name = fn.name
        try:
            made = TEXT_FORMATTERS.get(level, {}).get(name) or text_formatter(fn, level)
            params = made(args, result, True)
        except Exception as exc:  # an argument the format cannot show must not change the call's result
            params = f".<unprintable> = {type(exc).__name__}: {exc}"
        self._info(name, params=params, result="OL_SUCCESS")

    def emit(self, call: TracedCall) -> None:
        try:
            params = join(call.params())
        except Exception as exc:  # an argument the format cannot show must not change the call's result
            params = f".<unprintable> = {type(exc).__name__}: {exc}"
        error = call.error
        self._info(call.name, params=params, result=result_text(error), details=None if error is None else error.details)


class TimelineTracer:
    """Records each traced call on a ``_trace.timeline.Timeline``; writes it at the final ``olShutDown``
    (the caller says which one is: ``call.final``), and at the one that closes the user's window
    (``call.closes_window``) or when asked (``flush``), the session going on."""

    __slots__ = ("timeline",)

    def __init__(self, path: str, owner_of: Callable[[int], Device | None]) -> None:
        self.timeline = Timeline(path, owner_of)

    def done(self, fn: Function, args: tuple[Any, ...], result: Any, start_ns: int, end_ns: int, level: str) -> None:
        """A call of ``fn`` that succeeded (the entry points' common case)."""
        self.emit(TracedCall(fn, args, result, None, end_ns - start_ns, level=level))

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

    def span(self, name: str, cat: str, start_ns: int, end_ns: int, args: dict[str, Any]) -> None:
        """A span of work on the calling thread that is no ``ol*`` call (``offload.build``)."""
        try:
            self.timeline.span(name, cat, start_ns, end_ns, args)
        except Exception as exc:  # noqa: BLE001 - the timeline never changes the call's result
            self.timeline.warn(f"could not record {name}", exc)


OFF_VALUES = frozenset({"", "0", "off", "false", "no"})  # OFFLOAD_TRACE values that leave tracing off


class StreamTracer(TimelineTracer):
    """Records each traced call on a ``timeline_stream.StreamTimeline`` (the Perfetto binary file,
    appended in chunks); the final ``olShutDown`` writes the last chunk and closes the file."""

    __slots__ = ()

    def __init__(self, path: str, owner_of: Callable[[int], Device | None]) -> None:
        from .timeline_stream import StreamTimeline

        self.timeline = StreamTimeline(path, owner_of)

    def done(self, fn: Function, args: tuple[Any, ...], result: Any, start_ns: int, end_ns: int, level: str) -> None:
        """A call of ``fn`` that succeeded: recorded without a TracedCall (no parameters are shown)."""
        timeline: Any = self.timeline
        try:
            timeline.record_call(fn.name, args, result, None, start_ns, end_ns, False)
        except Exception as exc:  # noqa: BLE001 - the timeline never changes the call's result
            timeline.warn(f"could not record {fn.name}", exc)

    def emit(self, call: TracedCall) -> None:
        end = perf_counter_ns()
        final = call.final
        timeline: Any = self.timeline
        try:
            timeline.record_call(call.name, call.args, call.result, call.error, end - call.elapsed_ns, end, final)
        except Exception as exc:  # noqa: BLE001 - the timeline never changes the call's result
            timeline.warn(f"could not record {call.name}", exc)
        if final:
            timeline.write()
        elif call.closes_window:
            timeline.flush()


def tracer_from_environment(
    setting: str | None, owner_of: Callable[[int], Device | None]
) -> Tracer | TextTracer | TimelineTracer | None:
    """The tracer for an ``OFFLOAD_TRACE`` value (None when unset, or one of ``OFF_VALUES`` in
    any case and spacing, and no app logger is set). ``owner_of``: the device owning an address
    in the session being traced (the timeline places a synchronous fill with it)."""
    if _app_logger is not None:
        return Tracer(_app_logger)
    if setting is None or setting.strip().lower() in OFF_VALUES:
        return None
    path = path_from_setting(setting)
    if path is not None:  # the file's name says its format: .json the trace-event JSON, else Perfetto's protobuf
        return TimelineTracer(path, owner_of) if path.lower().endswith(".json") else StreamTracer(path, owner_of)
    # imported here, not at the top: structlog takes ~50 ms to import, which `import offload`
    # without tracing (the common case) does not pay
    import structlog

    if setting.strip().lower() == "json":
        processors: list[Any] = [_drop_event_key, structlog.processors.JSONRenderer(), _line]
        logger = structlog.wrap_logger(LineWriter(sys.stderr), processors=processors, wrapper_class=structlog.BoundLogger)
        return Tracer(logger.bind())
    # the text trace: the cheapest configuration that still routes each call as an event (one
    # renderer, a logger that writes the line; measured in bench_tracing)
    logger = structlog.wrap_logger(LineWriter(sys.stderr), processors=[render_line], wrapper_class=structlog.BoundLogger)
    return TextTracer(logger.bind())


def _drop_event_key(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    event.pop("event", None)
    return event


def _line(_logger: Any, _method: str, rendered: Any) -> str:
    return f"{rendered}\n"
