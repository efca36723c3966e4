"""The public ol* functions: ``_codegen``'s source of each ``_api_table`` entry, compiled once
(``_codecache`` keeps the code between processes) and bound to the runtime, so the per-call path
holds only what that function needs: one read of the runtime state (``STATE.untraced``: None
while tracing is on or before ``olInit``, so that the slow branch alone tests for tracing), one
class test per address or size argument (anything else is converted: ``__offload_ptr__``,
``__index__``), the validation conditions (skipped by one test when
``OFFLOAD_DISABLE_VALIDATION`` was set), one class-and-context test per handle, and the
implementation call, registered in ``ctx.calls`` while it runs (so the final ``olShutDown`` waits
for it): its name, or the value of the parameter its table entry ``registers`` (olLaunchKernel:
the kernel, for olDestroyProgram).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

from . import implementations as _api, table as _api_table
from .._values.signatures import Function
from .codecache import DEFAULT_CACHE, code_objects
from .codegen import sources
from .._values.enums import ErrorCode
from .._values.errors import OffloadError, as_offload_error
from .._core.handles import Context, Device, Event, Platform, Program, Queue, Symbol, _Handle
from .._core.ranges import as_address, as_size
from .._core.runtime import STATE, uninitialized

LIFECYCLE = ("olInit", "olShutDown")  # the flat API's functions written by hand, not generated from the table
from .._core.runtime import init as _runtime_init
from .._core.runtime import shutdown as _runtime_shutdown
from .._trace.tracing import TRACE_ENV, TimelineTracer, TracedCall, Tracer, tracer_from_environment
from .._values.types import KernelLaunchSizeArgs, buffer_size

_STALE_CODES = {
    Platform: ErrorCode.INVALID_PLATFORM,
    Device: ErrorCode.INVALID_DEVICE,
    Context: ErrorCode.INVALID_CONTEXT,
    Queue: ErrorCode.INVALID_QUEUE,
    Event: ErrorCode.INVALID_EVENT,
    Program: ErrorCode.INVALID_ARGUMENT,
    Symbol: ErrorCode.INVALID_ARGUMENT,
}


def _stale(value: Any, cls: type[_Handle], c_name: str) -> OffloadError:
    """The error for a handle argument that is NULL, of the wrong kind, or not live."""
    if value is None:
        return OffloadError(ErrorCode.INVALID_NULL_HANDLE, f"NULL == {c_name}")
    code = _STALE_CODES[cls]
    if not isinstance(value, cls):
        return OffloadError(code, f"{c_name} must be a {cls.__name__} handle, got {type(value).__name__}")
    if value._ctx is None:
        return OffloadError(code, f"{c_name} {value!r} was destroyed (or its olInit session ended)")
    return OffloadError(code, f"{c_name} {value!r} belongs to an earlier olInit session")


def _traced(ctx: Any, fn: Function, body: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    start = perf_counter_ns()
    try:
        result = body(ctx, *args)
    except OffloadError as error:
        ctx.tracer.emit(TracedCall(fn, args, None, error, perf_counter_ns() - start, level=ctx.api_level))
        raise
    ctx.tracer.emit(TracedCall(fn, args, result, None, perf_counter_ns() - start, level=ctx.api_level))
    return result


def _count(value: Any) -> int:
    """The length of a sequence argument (0 for anything without one: the call reports it)."""
    try:
        return len(value)
    except TypeError:
        return 0


def _zero_extent(value: Any) -> bool:
    """Whether an olMemcpyRect extent (Dimensions or three numbers) has a zero side (anything else:
    False, the call itself reports it)."""
    try:
        x, y, z = value
        return bool(x == 0 or y == 0 or z == 0)
    except (TypeError, ValueError):
        return False


def generate(trace: bool = True, cache: str | None = DEFAULT_CACHE) -> dict[str, Callable[..., Any]]:
    """Compile every table function; ``trace=False`` leaves the tracing test out (benchmarks).

    The compiled code of the default form comes from ``cache`` (``_codecache``) when it holds
    exactly today's sources; None compiles afresh."""
    namespace: dict[str, Any] = {
        "_STATE": STATE,
        "_uninitialized": uninitialized,
        "_OffloadError": OffloadError,
        "_as_offload_error": as_offload_error,
        "_stale": _stale,
        "_traced": _traced,
        "_nbytes": buffer_size,
        "_as_address": as_address,
        "_as_size": as_size,
        "_KernelLaunchSizeArgs": KernelLaunchSizeArgs,
        "_count": _count,
        "_zero_extent": _zero_extent,
        **{f"_{cls.__name__}": cls for cls in _STALE_CODES},
    }
    codes = code_objects(sources(trace), cache if trace else None)
    functions = {}
    for fn in _api_table.FUNCTIONS:
        namespace[f"_impl_{fn.name}"] = _api.implementation(fn.name)
        namespace[f"_FN_{fn.name}"] = fn
        exec(codes[fn.name], namespace)
        public = namespace[fn.name]
        public.__doc__ = fn.doc
        public.__module__ = "offload"
        public.__qualname__ = fn.name
        functions[fn.name] = public
    return functions


def _tracer_from_environment(owner_of: Callable[[int], Device | None]) -> Tracer | TimelineTracer | None:
    """The new session's tracer, as ``OFFLOAD_TRACE`` says (None: not tracing)."""
    return tracer_from_environment(os.environ.get(TRACE_ENV), owner_of)


def olInit(init_args: Any = None) -> None:
    """Initialise the library (reference counted; the first call loads the backends).

    ``init_args``: an ``offload.InitArgs`` (liboffload main's ``ol_init_args_t``): the platforms
    to bring up and the API level (``"r1"``, the default, or ``"main"``); None for the defaults.
    Only the call that starts a session reads it, as liboffload does."""
    start = perf_counter_ns()
    _runtime_init(init_args, _tracer_from_environment)
    ctx = STATE.ctx
    if ctx is not None and ctx.tracer is not None:  # printed after the call, as liboffload does (PR #167893)
        ctx.tracer.emit(TracedCall(None, (init_args,), None, None, perf_counter_ns() - start, api="olInit", level=ctx.api_level))


def olShutDown() -> None:
    """Drop one reference; the last one releases everything, joining every error.

    The last one first waits for the calls other threads are inside (a long synchronous launch
    included), keeps going whatever is raised during the teardown (a ``KeyboardInterrupt`` is
    re-raised once it is done) and raises the errors of destroyed queues too. Inside a host
    function it releases that function's own queue from inside (the work queued behind it is
    dropped) without waiting for other threads' ``olSyncQueue`` / ``olSyncEvent``.

    The tracer is told whether this call ended the session (``final``) or closed the user's
    ``olInit`` window while the object layer holds references of its own (``closes_window``): the
    timeline writes its file at either, so that it never reads the runtime's state itself.
    """
    ctx = STATE.ctx
    tracer = None if ctx is None else ctx.tracer
    start = perf_counter_ns()
    try:
        closes_window = _runtime_shutdown()
    except OffloadError as error:
        if tracer is not None:
            tracer.emit(TracedCall(None, (), None, error, perf_counter_ns() - start, "olShutDown", STATE.ctx is not ctx))
        raise
    if tracer is not None:
        elapsed = perf_counter_ns() - start
        tracer.emit(TracedCall(None, (), None, None, elapsed, "olShutDown", STATE.ctx is not ctx, closes_window=closes_window))
