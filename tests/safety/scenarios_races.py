"""Memory-safety scenarios of races (run by scenarios.py in a child of their own): allocations
racing the destruction of their context, copies racing a free, fills racing the final
olShutDown and fills as it begins."""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import offload as ol

from scenario_kit import A, buffer, host_device, outcome, scenario


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
