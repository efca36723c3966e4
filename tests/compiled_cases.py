"""Calls off the compiled path's common case, run by test_compiled_path.py in a child process with
``OFFLOAD_COMPILED=1`` and again with ``0``: each case prints one line (its name, then the error
code and message it raised, or its result), then a last line holding every compiled function's
``counts`` (None without the compiled path). Both runs must print the same case lines: the
compiled functions defer every one of them to the generated Python functions, or call the same
backend hooks, so each error has one source."""

from __future__ import annotations

import ctypes
import json
import struct
import sys
from collections.abc import Callable
from typing import Any

import offload as ol
from offload_host import build_test_kernel

COMPILED = ("olLaunchKernel", "olMemcpy", "olMemFill", "olSyncQueue", "olQueryQueue", "olCreateEvent",
            "olSyncEvent", "olWaitEvents", "olGetEventElapsedTime", "olLaunchHostFunction")


def case(name: str, call: Callable[[], Any]) -> None:
    try:
        result = call()
    except ol.OffloadError as error:
        print(f"{name}: {error.code.name}: {error.details}")
        return
    shown = type(result).__name__ if isinstance(result, (ol.Event, float)) else repr(result)  # (times vary)
    print(f"{name}: ok {shown}")


def main() -> None:
    case("launch before olInit", lambda: ol.olLaunchKernel(None, None, None, None, None))
    case("sync before olInit", lambda: ol.olSyncQueue(None))
    ol.olInit()
    devices: list[ol.Device] = []
    ol.olIterateDevices(lambda d, _: devices.append(d) or True)
    host = next(d for d in devices if d.is_host)
    program = ol.olCreateProgram(host, build_test_kernel("sequence"))
    kernel = ol.olGetSymbol(program, "sequence", ol.SymbolKind.KERNEL)
    one = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
    buf = ol.olMemAlloc(host, ol.AllocType.HOST, 64)
    args = struct.pack("<I4xQ", 0, buf)  # sequence(idx, inout): inout[0] = 0
    queue = ol.olCreateQueue(host)
    dead = ol.olCreateQueue(host)
    ol.olDestroyQueue(dead)
    # olLaunchKernel
    case("launch ok", lambda: ol.olLaunchKernel(queue, host, kernel, args, one))  # checks `one` (deferred)
    case("launch ok again", lambda: ol.olLaunchKernel(queue, host, kernel, args, one))  # compiled: `one` was checked
    case("launch sync", lambda: ol.olLaunchKernel(None, host, kernel, bytearray(args), one))
    case("launch short args", lambda: ol.olLaunchKernel(queue, host, kernel, args[:4], one))
    case("launch None args", lambda: ol.olLaunchKernel(queue, host, kernel, None, one))
    case("launch not bytes", lambda: ol.olLaunchKernel(queue, host, kernel, 42, one))
    case("launch list args", lambda: ol.olLaunchKernel(queue, host, kernel, [b"\0" * 8], one))
    case("launch dead queue", lambda: ol.olLaunchKernel(dead, host, kernel, args, one))
    case("launch NULL device", lambda: ol.olLaunchKernel(queue, None, kernel, args, one))
    case("launch queue as device", lambda: ol.olLaunchKernel(queue, queue, kernel, args, one))
    case("launch zero extent", lambda: ol.olLaunchKernel(queue, host, kernel, args, ol.KernelLaunchSizeArgs(1, (0, 1, 1), (1, 1, 1))))
    case("launch too much local memory", lambda: ol.olLaunchKernel(None, host, kernel, args, ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1), 1 << 40)))
    case("launch bad properties", lambda: ol.olLaunchKernel(queue, host, kernel, args, one, {"x": 1}))
    case("launch a tuple size", lambda: ol.olLaunchKernel(queue, host, kernel, args, (1, 1, 1)))
    # olMemcpy, olMemFill
    src = (ctypes.c_char * 64)()
    s = ctypes.addressof(src)
    case("copy ok", lambda: ol.olMemcpy(None, buf, host, s, host, 8))  # finds both ranges safe (deferred)
    case("copy ok again", lambda: ol.olMemcpy(None, buf, host, s, host, 8))  # compiled: _ranges.HOT covers both
    case("copy NULL dst", lambda: ol.olMemcpy(None, 0, host, s, host, 8))
    case("copy overrun", lambda: ol.olMemcpy(None, buf, host, s, host, 65))
    case("copy negative size", lambda: ol.olMemcpy(None, buf, host, s, host, -1))
    case("copy float size", lambda: ol.olMemcpy(None, buf, host, s, host, 8.0))
    case("copy unmapped", lambda: ol.olMemcpy(None, buf, host, 8, host, 8))
    case("copy dead queue", lambda: ol.olMemcpy(dead, buf, host, s, host, 8))
    case("fill ok", lambda: ol.olMemFill(queue, buf, b"ab", 64))
    case("fill not a multiple", lambda: ol.olMemFill(queue, buf, b"abc", 64))
    case("fill empty pattern", lambda: ol.olMemFill(queue, buf, b"", 64))
    case("fill overrun", lambda: ol.olMemFill(queue, buf, b"ab", 66))
    case("fill unknown sync", lambda: ol.olMemFill(None, s, b"ab", 8))
    # queues and events
    case("sync dead queue", lambda: ol.olSyncQueue(dead))
    case("query event as queue", lambda: ol.olQueryQueue(program))
    event = ol.olCreateEvent(queue)
    case("create event bad flags", lambda: ol.olCreateEvent(queue, 99))
    case("create event dead queue", lambda: ol.olCreateEvent(dead))
    case("wait events not a sequence", lambda: ol.olWaitEvents(queue, 3))
    case("wait events NULL event", lambda: ol.olWaitEvents(queue, [None]))
    case("wait events queue", lambda: ol.olWaitEvents(queue, [queue]))
    case("wait events ok", lambda: ol.olWaitEvents(queue, (event,)))
    case("host function not callable", lambda: ol.olLaunchHostFunction(queue, 3, None))
    case("host function raises", lambda: ol.olLaunchHostFunction(queue, lambda _: 1 / 0, None))
    case("sync after a failed host function", lambda: ol.olSyncQueue(queue))
    later = ol.olCreateEvent(queue)
    ol.olSyncEvent(later)
    case("elapsed time ok", lambda: ol.olGetEventElapsedTime(event, later))
    case("elapsed time of a queue", lambda: ol.olGetEventElapsedTime(queue, later))
    # a backend hook raising something else than an OffloadError: converted the same way
    real = host.backend.sync_event
    host.backend.sync_event = lambda device, native: int("not a number")  # type: ignore[method-assign]
    case("sync event hook raises ValueError", lambda: ol.olSyncEvent(later))
    host.backend.sync_event = real  # type: ignore[method-assign]
    case("sync event ok", lambda: ol.olSyncEvent(later))
    case("sync event of a queue", lambda: ol.olSyncEvent(queue))
    case("query ok", lambda: ol.olQueryQueue(queue))
    ol.olDestroyQueue(queue)
    case("sync destroyed queue", lambda: ol.olSyncQueue(queue))
    ol.olDestroyProgram(program)
    case("launch destroyed kernel", lambda: ol.olLaunchKernel(None, host, kernel, args, one))
    ol.olMemFree(buf)
    ol.olShutDown()
    case("launch after olShutDown", lambda: ol.olLaunchKernel(None, host, kernel, args, one))
    counts = {name: getattr(getattr(ol, name), "counts", None) for name in COMPILED}
    print("COUNTS " + json.dumps(counts))


if __name__ == "__main__":
    main()
    sys.exit(0)
