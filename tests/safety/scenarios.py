"""Memory-safety scenarios, each run in a child process of its own (``python scenarios.py NAME``):
a fault fails only the test that ran it. Each prints one JSON line, ``RESULT {...}``, with what
it saw (error code names, bytes read back); the test decides what was right. The path (compiled
or pure Python) is the child's ``OFFLOAD_COMPILED``, inherited from the test run."""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import offload as ol

A = ol.AllocType
SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {}


def scenario(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    SCENARIOS[fn.__name__] = fn
    return fn


def outcome(call: Callable[..., Any], *args: Any) -> str:
    """'OK' or the error code's name."""
    try:
        call(*args)
    except ol.OffloadError as error:
        return error.code.name
    return "OK"


def host_device() -> ol.DeviceHandle:
    found: list[ol.DeviceHandle] = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True, None)
    return next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)


def mapped(address: int, size: int, write: bool = True) -> bool:
    """Whether [address, address + size) is mapped writable (or readable) now (a fresh read of the
    mappings, one mapping)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if lo <= address and address + size <= hi and perms[1 if write else 0] in "wr":
                return True
    return False


def buffer(size: int, fill: int = 0) -> Any:
    data = (ctypes.c_uint8 * size)()
    ctypes.memset(data, fill, size)
    return data


def read(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size)


# --- olMemcpyRect --------------------------------------------------------------------------------


@scenario
def rect_far_past_managed() -> dict[str, Any]:
    """A rect of pitch 4096 over 2**20 rows into a 4096-byte MANAGED allocation (defect 1)."""
    host = host_device()
    dst = ol.olMemAlloc(host, A.MANAGED, 4096)
    ol.olMemFill(None, dst, b"\0", 4096)
    neighbour = ol.olMemAlloc(host, A.DEVICE, 4096)
    ol.olMemFill(None, neighbour, b"\x11", 4096)
    canary = buffer(1 << 16, 0x22)
    src = buffer(8 << 20, 0xAB)
    code = outcome(
        ol.olMemcpyRect,
        None,
        ol.Rect(dst, host, (0, 0, 0), 4096, 0),
        ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 8, 0),
        (8, 1 << 20, 1),
    )
    span = outcome(ol.olMemcpy, None, dst, host, ctypes.addressof(src), host, (1 << 20) * 4096)
    result = {
        "rect": code,
        "memcpy_of_span": span,
        "dst_untouched": read(dst, 4096) == bytes(4096),
        "neighbour_untouched": read(neighbour, 4096) == b"\x11" * 4096,
        "canary_untouched": bytes(canary) == b"\x22" * (1 << 16),
    }
    ol.olMemFree(dst)
    ol.olMemFree(neighbour)
    return result


@scenario
def rect_rows_past_allocation() -> dict[str, Any]:
    """Rows 1.. of a strided rect lie past a one-page allocation, row 0 inside it; with and
    without a queue, host and device sides."""
    host = host_device()
    results: dict[str, Any] = {}
    src = buffer(4 * 4096, 0xCD)
    for kind in (A.DEVICE, A.HOST, A.MANAGED):
        for queued in (False, True):
            dst = ol.olMemAlloc(host, kind, 4096)
            ol.olMemFill(None, dst, b"\0", 4096)
            queue = ol.olCreateQueue(host) if queued else None
            code = outcome(
                ol.olMemcpyRect,
                queue,
                ol.Rect(dst, host, (0, 0, 0), 4096, 0),
                ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 4096, 0),
                (64, 4, 1),
            )
            if queue is not None:
                ol.olSyncQueue(queue)
                ol.olDestroyQueue(queue)
            results[f"{kind.name}{'-queued' if queued else ''}"] = [code, read(dst, 4096) == bytes(4096)]
            ol.olMemFree(dst)
    return results


@scenario
def rect_source_row_overruns() -> dict[str, Any]:
    """Row 1 of a rect overruns its 64-byte source allocation (defect 5): nothing may be written,
    with or without a queue."""
    host = host_device()
    results: dict[str, Any] = {}
    src = ol.olMemAlloc(host, A.HOST, 64)
    ol.olMemFill(None, src, b"\x5a", 64)
    for queued in (False, True):
        dst = buffer(256)
        queue = ol.olCreateQueue(host) if queued else None
        code = outcome(
            ol.olMemcpyRect,
            queue,
            ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 64, 0),
            ol.Rect(src, host, (0, 0, 0), 48, 0),
            (40, 2, 1),
        )
        if queue is not None:
            ol.olSyncQueue(queue)
            ol.olDestroyQueue(queue)
        results["queued" if queued else "sync"] = [code, bytes(dst) == bytes(256)]
    # the same rect within bounds copies every row
    dst = buffer(256)
    code = outcome(
        ol.olMemcpyRect,
        None,
        ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 64, 0),
        ol.Rect(src, host, (0, 0, 0), 24, 0),
        (20, 2, 1),
    )
    results["inside"] = [code, bytes(dst)[:20] == b"\x5a" * 20 and bytes(dst)[64:84] == b"\x5a" * 20]
    ol.olMemFree(src)
    return results


# --- the range cache -----------------------------------------------------------------------------


@scenario
def copy_after_free() -> dict[str, Any]:
    """A copy into an allocation found safe before, after its free (the view of the mappings was
    read while it was mapped; the range cache held it)."""
    host = host_device()
    results: dict[str, Any] = {}
    plain = buffer(1 << 16, 0x33)
    for size in (4096, 3 * 4096, 1 << 20):
        p = ol.olMemAlloc(host, A.DEVICE, size)
        ol.olMemcpy(None, p, host, ctypes.addressof(plain), host, min(size, 1 << 16))  # p: hot
        fresh = buffer(4096)  # a host range the view may not know yet: the mappings are read again
        ol.olMemcpy(None, ctypes.addressof(fresh), host, ctypes.addressof(plain), host, 4096)
        ol.olMemFree(p)
        code = outcome(ol.olMemcpy, None, p, host, ctypes.addressof(plain), host, 8)
        results[str(size)] = [code, mapped(p, 8)]
    return results


@scenario
def free_from_host_function() -> dict[str, Any]:
    """olMemFree(p) from a host function, then a copy into p there, then after olSyncQueue
    (defect 2)."""
    host = host_device()
    plain = buffer(4096, 0x44)
    results: dict[str, Any] = {}
    for round_ in range(8):
        p = ol.olMemAlloc(host, A.DEVICE, 4096)
        ol.olMemcpy(None, p, host, ctypes.addressof(plain), host, 64)  # p: hot
        queue = ol.olCreateQueue(host)
        seen: list[str] = []

        def work(_: object, p: int = p, seen: list[str] = seen) -> None:
            ol.olMemFree(p)
            seen.append(outcome(ol.olMemcpy, None, p, host, ctypes.addressof(plain), host, 64))
            seen.append(outcome(ol.olMemFill, None, p, b"\1", 64))

        ol.olLaunchHostFunction(queue, work, None)
        ol.olSyncQueue(queue)
        after = outcome(ol.olMemcpy, None, p, host, ctypes.addressof(plain), host, 64)
        results[str(round_)] = [*seen, after, mapped(p, 64)]
        ol.olDestroyQueue(queue)
    return results


@scenario
def copy_after_program_destroyed() -> dict[str, Any]:
    """A legal copy into a host program's global, then the same copy after olDestroyProgram (defect 3)."""
    import offload_host

    host = host_device()
    plain = buffer(256, 0x55)
    results: dict[str, Any] = {}
    for round_ in range(3):
        program = ol.olCreateProgram(host, offload_host.build_test_kernel("global"))
        symbol = ol.olGetSymbol(program, "global", ol.SymbolKind.GLOBAL_VARIABLE)
        address = ol.olGetSymbolInfo(symbol, ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
        before = outcome(ol.olMemcpy, None, address, host, ctypes.addressof(plain), host, 64)
        ol.olDestroyProgram(program)
        after = outcome(ol.olMemcpy, None, address, host, ctypes.addressof(plain), host, 64)
        results[str(round_)] = [before, after, mapped(address, 64)]
    return results


# --- races ---------------------------------------------------------------------------------------


def _race(items: list[Any], first: Callable[[Any], str], second: Callable[[Any], str]) -> list[tuple[str, str]]:
    """For each item, run ``first(item)`` and ``second(item)`` at once on two threads: their outcomes."""
    results: list[tuple[str, str]] = []
    start = threading.Barrier(2)
    done = threading.Barrier(2)
    box: list[str] = [""]

    def other() -> None:
        for item in items:
            start.wait()
            box[0] = second(item)
            done.wait()

    thread = threading.Thread(target=other)
    thread.start()
    for item in items:
        start.wait()
        mine = first(item)
        done.wait()
        results.append((mine, box[0]))
    thread.join()
    return results


@scenario
def alloc_races_destroy_context() -> dict[str, Any]:
    """olMemAlloc (and olCreateQueue, olCreateProgram) into a context racing olDestroyContext of
    it (defect 6): exactly one may succeed."""
    import offload_host

    sys.setswitchinterval(1e-6)
    host = host_device()
    image = offload_host.build_test_kernel("foo")
    both = neither = 0
    tallies: dict[str, int] = {}
    for what, rounds in (("alloc", 1200), ("queue", 300), ("program", 300)):
        made: list[Any] = []

        def make(context: Any, what: str = what, made: list[Any] = made) -> str:
            try:
                if what == "alloc":
                    made.append(ol.olMemAlloc(host, A.DEVICE, 64, context))
                elif what == "queue":
                    made.append(ol.olCreateQueue(host, context))
                else:
                    made.append(ol.olCreateProgram(host, image, context))
            except ol.OffloadError as error:
                return error.code.name
            return "OK"

        outcomes = _race([ol.olCreateContext([host]) for _ in range(rounds)], make, lambda c: outcome(ol.olDestroyContext, c))
        for made_one, destroyed in outcomes:
            key = f"{what}:{made_one}/{destroyed}"
            tallies[key] = tallies.get(key, 0) + 1
            both += made_one == "OK" and destroyed == "OK"
            neither += made_one != "OK" and destroyed != "OK"
        for thing in made:  # what was made (in a live context, or a destroyed one: then leaked)
            if what == "alloc":
                ol.olMemFree(thing)
            elif what == "queue":
                ol.olDestroyQueue(thing)
            else:
                ol.olDestroyProgram(thing)
    return {"both": both, "neither": neither, "tallies": tallies}


@scenario
def copy_races_free() -> dict[str, Any]:
    """olMemcpy into p on one thread while another frees p (defect 7): each copy is done or
    refused (INVALID_ARGUMENT), never a fault; also fills and queued copies."""
    sys.setswitchinterval(1e-5)
    host = host_device()
    plain = buffer(1 << 16, 0x66)
    codes: dict[str, int] = {}
    stop = threading.Event()
    current: list[int] = [0]
    queue = ol.olCreateQueue(host)

    def copier(kind: int) -> None:
        while not stop.is_set():
            p = current[0]
            for _ in range(64):  # into p until it is refused (freed meanwhile)
                if kind == 0:
                    code = outcome(ol.olMemcpy, None, p, host, ctypes.addressof(plain), host, 1 << 16)
                elif kind == 1:
                    code = outcome(ol.olMemcpy, None, ctypes.addressof(plain), host, p, host, 1 << 16)
                elif kind == 2:
                    code = outcome(ol.olMemFill, None, p, b"\7", 1 << 16)
                else:
                    code = outcome(ol.olMemcpy, queue, p, host, ctypes.addressof(plain), host, 1 << 16)
                codes[code] = codes.get(code, 0) + 1
                if code != "OK":
                    break
            if kind == 3:
                ol.olSyncQueue(queue)

    threads = [threading.Thread(target=copier, args=(k,)) for k in range(4)]
    current[0] = ol.olMemAlloc(host, A.DEVICE, 1 << 16)
    for thread in threads:
        thread.start()
    for _ in range(150):
        time.sleep(0.0002)  # the copiers take it up
        p = current[0]
        current[0] = ol.olMemAlloc(host, A.DEVICE, 1 << 16)
        ol.olMemFree(p)
    stop.set()
    for thread in threads:
        thread.join()
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
    ol.olMemFree(current[0])
    return {"codes": codes}


@scenario
def fill_races_shutdown() -> dict[str, Any]:
    """Synchronous fills on several threads while the session's final olShutDown runs: each is
    done or UNINITIALIZED, never a fault."""
    sys.setswitchinterval(1e-6)
    codes: dict[str, int] = {}
    ol.olShutDown()  # main()'s reference: each round's olShutDown below is the final one
    for _ in range(40):
        ol.olInit()
        host = host_device()
        p = ol.olMemAlloc(host, A.DEVICE, 1 << 16)
        ol.olMemFill(None, p, b"\1", 1 << 16)  # p: hot
        go = threading.Event()

        def filler() -> None:
            go.wait()
            for _ in range(100000):
                code = outcome(ol.olMemFill, None, p, b"\2", 1 << 16)
                codes[code] = codes.get(code, 0) + 1
                if code == "UNINITIALIZED":
                    return

        threads = [threading.Thread(target=filler) for _ in range(3)]
        for thread in threads:
            thread.start()
        go.set()
        ol.olShutDown()
        for thread in threads:
            thread.join()
    ol.olInit()  # (main() shuts the last one down)
    return {"codes": codes}


@scenario
def fill_as_shutdown_begins() -> dict[str, Any]:
    """A synchronous fill that has looked up its allocation when the final olShutDown begins, and
    goes on while the teardown is about to drop the allocations (trace functions hold each thread
    at those two points): the Python fill registered before its lookup, so the teardown waits for
    it (OK). The compiled fill replays the verdict the first fill published and runs no Python code
    between its lookup and its registration, so there is no such point to hold it at: it ends
    before the teardown begins (OK)."""
    from offload._core.native import ENABLED
    from offload._core.session import STATE

    ol.olShutDown()  # main()'s reference: the olShutDown below is the final one
    codes = []
    for _ in range(3):
        ol.olInit()
        host = host_device()
        p = ol.olMemAlloc(host, A.DEVICE, 4096)
        ol.olMemFill(None, p, b"\1", 4096)  # p: hot
        at_find, at_drain, filled = threading.Event(), threading.Event(), threading.Event()
        code: list[str] = []

        def in_find(frame: Any, event: str, arg: Any) -> None:
            if event == "call" and frame.f_code.co_name == "find" and not at_find.is_set():
                at_find.set()
                at_drain.wait(1.0)  # (the Python path's teardown waits for this call: it goes on after 1 s)

        def in_drain(frame: Any, event: str, arg: Any) -> None:
            if event == "call" and frame.f_code.co_name == "drain" and not at_drain.is_set():
                at_drain.set()
                filled.wait(5.0)

        def worker() -> None:
            sys.settrace(in_find)
            code.append(outcome(ol.olMemFill, None, p, b"\2", 4096))
            sys.settrace(None)
            filled.set()

        thread = threading.Thread(target=worker)
        thread.start()
        at_find.wait(0.5 if ENABLED else 5.0)  # (compiled: never reached)
        if ENABLED:
            thread.join()
        sys.settrace(in_drain)
        ol.olShutDown()
        sys.settrace(None)
        thread.join()
        codes.append(code[0] if STATE.ctx is None else "session left open")
    ol.olInit()  # (main() shuts the last one down)
    return {"codes": codes}


def main() -> None:
    name = sys.argv[1]
    ol.olInit()
    result = SCENARIOS[name]()
    ol.olShutDown()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
