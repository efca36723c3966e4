"""The final ``olShutDown``'s teardown of a session: wait for the calls other threads are inside,
then release every queue, program, allocation, device and backend, keeping every error and
interrupt (``drain``: a deadline and Ctrl-C are the way out of waiting for stuck work).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._compiled import interface as compiled_interface
from .._values.errors import OffloadError, as_offload_error
from .drain import Drain, pending_work, shutdown_timeout, stuck_error
from .ranges import HOST_MAPPINGS
from .registry import release_backend
from .session import Session


def _collect(errors: list[OffloadError], interrupts: list[BaseException], what: str, call: Any, *args: Any) -> None:
    """Call a backend hook during teardown, keeping its failure instead of raising it."""
    try:
        call(*args)
    except BaseException as exc:  # noqa: B036 - kept and re-raised after the teardown
        keep(errors, interrupts, exc, what)


def keep(errors: list[OffloadError], interrupts: list[BaseException], exc: BaseException, what: str) -> None:
    """Sort one raised exception into errors (every member of a group) and interrupts."""
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(Exception)
        if matched is not None:
            errors.append(as_offload_error(matched, what))
        if rest is not None:
            interrupts.append(rest)
    elif isinstance(exc, Exception):
        errors.append(as_offload_error(exc, what))
    else:
        interrupts.append(exc)


WAITS = frozenset({"olSyncQueue", "olSyncEvent"})


def _other_calls(ctx: Session, own: int, ignore: frozenset[str]) -> list[str]:
    """The calls other threads are inside (``own`` calls of this thread, and ``ignore``d names, aside)."""
    calls = [str(name) for name in list(ctx.calls) if name not in ignore]
    return calls[own:] if len(calls) > own else []


def wait_for_calls(ctx: Session, own: int, ignore: frozenset[str] = frozenset(), drain: Drain | None = None) -> bool:
    """Wait until no thread but this one (``own`` calls deep) is inside a call of ``ctx`` (calls
    named in ``ignore`` aside); False where ``drain`` gave up first."""
    drain = drain if drain is not None else Drain(None, lambda: 0)
    return drain.wait(lambda: bool(_other_calls(ctx, own, ignore)),
                      lambda: f"calls on other threads ({', '.join(_other_calls(ctx, own, ignore))})")  # fmt: skip


def teardown(
    ctx: Session,
    errors: list[OffloadError],
    interrupts: list[BaseException],
    own_calls: int = 0,
    ignore: frozenset[str] = frozenset(),
    sigints: Callable[[], int] = lambda: 0,
    own_queue: Any = None,
) -> None:
    """Release every queue, program, allocation, device and backend of ``ctx`` (after the calls
    other threads are inside have returned), keeping every error and interrupt. Where waiting
    stops (``_core.drain``: the deadline, Ctrl-C twice), what the pending work may use stays in place: all of
    it while other threads are inside calls, else each stuck device's programs, memory and
    queues and its backend. ``own_queue``: the queue whose host function calls this (released
    from inside, never waited for)."""
    drain = Drain(shutdown_timeout(errors), sigints)
    if not wait_for_calls(ctx, own_calls, ignore, drain):
        running = ", ".join(_other_calls(ctx, own_calls, ignore)) or "calls that returned meanwhile"
        errors.append(stuck_error(drain, [f"calls on other threads: {running}"], ["every queue, program, allocation and device"]))
        return
    errors.extend(ctx.orphan_errors)
    ctx.orphan_errors = []
    leftover = ctx.allocations.drain()
    ctx.globals.drain()
    stuck: list[str] = []
    kept: list[str] = []
    for platform in ctx.platforms:
        bound = platform.backend
        stuck_here = False
        for device in platform.devices:
            with device.lock:
                queues = [(f"queue #{q.id}", q.native) for q in device.queues]
                queues += [("a destroyed (parked) queue", q) for q in device.parked]
                for queue in device.queues:
                    queue._ctx = None
                device.queues.clear()
                device.parked = []
                programs = list(device.programs)
                device.programs.clear()
            busy = []
            for label, native_queue in queues:
                pending = functools.partial(bound.has_pending_work, device.native, native_queue)
                what = functools.partial(lambda lb, q: f"{lb} of {device._describe()}: {pending_work(q)}", label, native_queue)
                try:  # (a faulted device runs none of its work any more: nothing to wait for)
                    idle = native_queue is own_queue or device.fault is not None or drain.wait(pending, what)
                except Exception as exc:  # its query failed: the queue takes no more work either
                    keep(errors, interrupts, exc, f"{bound.name}: has_pending_work")
                    idle = True
                if idle:
                    _collect(errors, interrupts, f"{bound.name}: synchronize", bound.synchronize, device.native, native_queue, True)
                else:
                    busy.append(f"{label} of {device._describe()}: {pending_work(native_queue)}")
            for program in programs:
                program._ctx = None
                for symbol in program.symbols.values():
                    symbol._ctx = None
            mine = [a for a in leftover if a.device is device]
            device._ctx = None
            if busy:  # the stuck work may still use them
                stuck += busy
                kept.append(f"{device._describe()}: {len(busy)} queue(s), {len(programs)} program(s), {len(mine)} allocation(s)")
                stuck_here = True
                continue
            for program in programs:
                _collect(errors, interrupts, f"{bound.name}: unload_binary", bound.unload_binary, device.native, program.image)
            if "mem_free" in bound.implemented:
                blocks = [(a.start, a.alloc_type) for a in mine] + device.pool.drain()  # olMemFreeAsync's pool too
                for start, alloc_type in blocks:
                    _collect(errors, interrupts, f"{bound.name}: mem_free", bound.mem_free, device.native, start, alloc_type)
        if stuck_here:
            kept.append(f"the backend {bound.name} (deinit would wait for the stuck work)")
        else:
            errors.extend(release_backend(bound, [d.native for d in platform.devices], interrupts))
        platform._ctx = None
    HOST_MAPPINGS.forget()  # after the memory and images were given back, never before
    compiled_interface.forget()  # no verdict keeps this session's handles alive
    if stuck:
        errors.append(stuck_error(drain, stuck, kept))
