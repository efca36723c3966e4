"""What the generated ol* functions (``_api.generated``) call besides the implementations: the
error for a stale handle argument, the call with tracing on or no session (``slow``), and two
argument measures of the table's checks; ``FUNCTION``, every table entry by name (the traced
call's declaration).
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

from .._core.handles import Context, Device, Event, Platform, Program, Queue, Symbol, _Handle
from .._core.session import STATE, uninitialized
from .._trace.tracing import TracedCall
from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._values.signatures import Function
from .table import FUNCTIONS

__all__ = ["FUNCTION", "STALE_CODES", "count", "slow", "stale", "traced", "zero_extent"]

FUNCTION: dict[str, Function] = {fn.name: fn for fn in FUNCTIONS}
_BODIES: dict[Callable[..., Any], Callable[..., Any]] = {}  # a generated function -> its body (``slow``)

STALE_CODES = {
    Platform: ErrorCode.INVALID_PLATFORM,
    Device: ErrorCode.INVALID_DEVICE,
    Context: ErrorCode.INVALID_CONTEXT,
    Queue: ErrorCode.INVALID_QUEUE,
    Event: ErrorCode.INVALID_EVENT,
    Program: ErrorCode.INVALID_ARGUMENT,
    Symbol: ErrorCode.INVALID_ARGUMENT,
}


def stale(value: Any, cls: type[_Handle], c_name: str) -> OffloadError:
    """The error for a handle argument that is NULL, of the wrong kind, or not live."""
    if value is None:
        return OffloadError(ErrorCode.INVALID_NULL_HANDLE, f"NULL == {c_name}")
    code = STALE_CODES[cls]
    if not isinstance(value, cls):
        return OffloadError(code, f"{c_name} must be a {cls.__name__.removesuffix('Handle')} handle, got {type(value).__name__}")
    if value._ctx is None:
        return OffloadError(code, f"{c_name} {value!r} was destroyed (or its olInit session ended)")
    return OffloadError(code, f"{c_name} {value!r} belongs to an earlier olInit session")


def traced(ctx: Any, fn: Function, body: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    start = perf_counter_ns()
    try:
        result = body(ctx, *args)
    except OffloadError as error:
        ctx.tracer.emit(TracedCall(fn, args, None, error, perf_counter_ns() - start, level=ctx.api_level))
        raise
    ctx.tracer.done(fn, args, result, start, perf_counter_ns(), ctx.api_level)
    return result


def slow(public: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """The call of the generated function ``public`` when ``STATE.untraced`` is None: no session (``uninitialized``), or tracing on (the call traced). Its body, the lines
    ``public`` runs itself without tracing, is compiled once from ``_api.codegen.body_source`` at
    those very lines of its module, so that a traceback shows them."""
    ctx = STATE.ctx
    if ctx is None:
        raise uninitialized()
    fn = FUNCTION[public.__name__]  # its table entry
    body = _BODIES.get(public)
    if body is None:
        from .codegen import body_source  # the generator: only once tracing meets this function

        code = public.__code__
        namespace: dict[str, Any] = {}
        exec(compile(body_source(fn, code.co_firstlineno), code.co_filename, "exec"), public.__globals__, namespace)
        body = _BODIES.setdefault(public, namespace[f"_body_{fn.name}"])
    if ctx.trace:
        return traced(ctx, fn, body, args)
    return body(ctx, *args)


def count(value: Any) -> int:
    """The length of a sequence argument (0 for anything without one: the call reports it)."""
    try:
        return len(value)
    except TypeError:
        return 0


def zero_extent(value: Any) -> bool:
    """Whether an olMemcpyRect extent (Dimensions or three numbers) has a zero side (anything else:
    False, the call itself reports it)."""
    try:
        x, y, z = value
        return bool(x == 0 or y == 0 or z == 0)
    except (TypeError, ValueError):
        return False
