"""``offload.flush_trace()``: write the timeline recorded so far, now (``_trace.timeline``)."""

from __future__ import annotations

import sys

from .._core.session import LOCAL, STATE
from .tracing import TimelineTracer


def flush_trace() -> str | None:
    """Write the trace recorded so far now, and return the timeline file's path.

    With ``OFFLOAD_TRACE=perfetto[:PATH]`` the session's timeline file is replaced, atomically,
    by one holding every call and every work span recorded up to now (work still running is
    counted in a note, and drawn by the next write); the session goes on, and later writes (the
    next ``flush_trace()``, the final ``olShutDown``, interpreter exit) replace the file with
    more. Call it where a process may end without exit handlers: at the end of a Ray actor's
    method, before ``os._exit``, at the end of a multiprocessing task. Safe to call repeatedly
    and from any thread; inside a host function it does not read device events (the work's
    completion callbacks still time it).

    Returns None, writing nothing, when no traced session is open, the trace is not a timeline
    (liboffload's lines and ``json`` go to stderr as they happen: stderr is flushed), or the file
    could not be written (an ``OffloadTraceWarning`` says why).
    """
    ctx = STATE.ctx
    tracer = None if ctx is None else ctx.tracer
    if isinstance(tracer, TimelineTracer):
        return tracer.flush(read_events=LOCAL.queue is None)
    if tracer is not None:
        sys.stderr.flush()
    return None
