"""The public ol* functions: ``_api.generated``'s function of each ``_api.table`` entry (written
by ``_api.codegen``), bound as ``offload.<name>``, and ``olInit`` / ``olShutDown``, written by hand.

A generated function holds only what it needs on the per-call path: one read of the session state
(``STATE.untraced``: None while tracing is on or before ``olInit``, so that the slow branch alone
tests for tracing), one class test per address or size argument (anything else is converted:
``__offload_ptr__``, ``__index__``), the validation conditions (skipped by one test when
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

from .._core.handles import Device
from .._core.runtime import init as _runtime_init
from .._core.runtime import shutdown as _runtime_shutdown
from .._core.session import STATE
from .._trace.tracing import TRACE_ENV, TimelineTracer, TracedCall, Tracer, tracer_from_environment
from .._values.errors import OffloadError
from . import generated
from . import table as _api_table

LIFECYCLE = ("olInit", "olShutDown")  # the flat API's functions written by hand, not generated from the table


def generate(trace: bool = True) -> dict[str, Callable[..., Any]]:
    """Every table function, bound (``offload.<name>``, its table docstring); ``trace=False``
    compiles them afresh without the tracing test (benchmarks: what tracing costs when off).

    The functions are ``_api.generated``'s, modules on disk (``python -m offload._api.codegen``
    writes them from the table), so Python's own bytecode cache keeps them and a traceback shows
    their lines."""
    if trace:
        functions = {fn.name: getattr(generated, fn.name) for fn in _api_table.FUNCTIONS}
    else:
        # deferred: only this variant compiles source, so `import offload` (and `python -m
        # offload._api.codegen`, which rewrites generated/) does not load the generator
        from .codegen import sources

        functions = {}
        namespaces: dict[int, dict[str, Any]] = {}  # per generated module: its imports and bindings
        for name, (source, filename) in sources(trace=False).items():
            module = getattr(generated, name).__globals__
            namespace = namespaces.setdefault(id(module), dict(module))
            exec(compile(source, filename, "exec"), namespace)
            functions[name] = namespace[name]
    for fn in _api_table.FUNCTIONS:
        public = functions[fn.name]
        public.__doc__ = fn.doc
        public.__module__ = "offload"
        public.__qualname__ = fn.name
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
