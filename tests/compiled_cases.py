"""Calls off the compiled path's common case, run by test_compiled_path.py in a child process with
``OFFLOAD_COMPILED=1`` and again with ``0``: each case prints one line (its name, then the error
code and message it raised, or its result), then a line holding the ``counts`` of the object
layer's compiled copies (``COPIES``) and a last line holding every compiled function's ``counts``
(None without the compiled path). Both runs must print the same case lines: the compiled
functions defer every one of them to the generated Python functions, or call the same backend
hooks, so each error has one source."""

from __future__ import annotations

import ctypes
import json
import struct
import sys
from collections.abc import Callable
from typing import Any

import offload as ol
from offload.objects import Array, Buffer, Queue, _session
from offload_host import build_test_kernel

COMPILED = ("olLaunchKernel", "olMemcpy", "olMemFill", "olSyncQueue", "olQueryQueue")
COPIERS = ((Buffer, "copy_from"), (Buffer, "copy_to"), (Array, "copy_from"), (Queue, "copy"))  # compiled copies


def case(name: str, call: Callable[[], Any]) -> None:
    try:
        result = call()
    except ol.OffloadError as error:
        print(f"{name}: {error.code.name}: {error.details}")
        return
    except (TypeError, AttributeError) as error:  # (a wrong type reaching Python code: the same both ways)
        print(f"{name}: {type(error).__name__}: {error}")
        return
    shown = type(result).__name__ if isinstance(result, (ol.EventHandle, float)) else repr(result)  # (times vary)
    print(f"{name}: ok {shown}")


def main() -> None:
    case("launch before olInit", lambda: ol.olLaunchKernel(None, None, None, None, None))
    case("sync before olInit", lambda: ol.olSyncQueue(None))
    ol.olInit()
    devices: list[ol.DeviceHandle] = []
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
    case("copy ok again", lambda: ol.olMemcpy(None, buf, host, s, host, 8))  # compiled: its route was published, HOT covers both
    case("copy NULL dst", lambda: ol.olMemcpy(None, 0, host, s, host, 8))
    case("copy overrun", lambda: ol.olMemcpy(None, buf, host, s, host, 65))
    case("copy negative size", lambda: ol.olMemcpy(None, buf, host, s, host, -1))
    case("copy float size", lambda: ol.olMemcpy(None, buf, host, s, host, 8.0))
    case("copy unmapped", lambda: ol.olMemcpy(None, buf, host, 8, host, 8))
    case("copy dead queue", lambda: ol.olMemcpy(dead, buf, host, s, host, 8))
    case("fill ok", lambda: ol.olMemFill(queue, buf, b"ab", 64))  # publishes the fill's verdict (deferred)
    case("fill ok again", lambda: ol.olMemFill(queue, buf, b"cd", 32))  # compiled: inside the verdict's allocation
    case("fill sync ok", lambda: ol.olMemFill(None, buf, b"ab", 64))  # another verdict: synchronous
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
    host.backend.sync_event = lambda device, native, queue=None: int("not a number")  # type: ignore[method-assign]
    case("sync event hook raises ValueError", lambda: ol.olSyncEvent(later))
    host.backend.sync_event = real  # type: ignore[method-assign]
    case("sync event ok", lambda: ol.olSyncEvent(later))
    case("sync event of a queue", lambda: ol.olSyncEvent(queue))
    case("query ok", lambda: ol.olQueryQueue(queue))
    ol.olDestroyQueue(queue)
    case("sync destroyed queue", lambda: ol.olSyncQueue(queue))
    ol.olDestroyProgram(program)
    case("launch destroyed kernel", lambda: ol.olLaunchKernel(None, host, kernel, args, one))
    ol.olMemFree(buf)  # a new snapshot: no verdict of the old one covers buf
    case("copy into freed memory", lambda: ol.olMemcpy(None, buf, host, s, host, 8))
    case("fill freed memory", lambda: ol.olMemFill(None, buf, b"ab", 64))
    ol.olShutDown()
    case("launch after olShutDown", lambda: ol.olLaunchKernel(None, host, kernel, args, one))
    copy_cases()
    copies = {f"{cls.__name__}.{name}": getattr(getattr(cls, name), "counts", None) for cls, name in COPIERS}
    print("COPIES " + json.dumps(copies))
    counts = {name: getattr(getattr(ol, name), "counts", None) for name in COMPILED}
    print("COUNTS " + json.dumps(counts))


def copy_cases() -> None:
    """The object layer's copies (objects/_compiled_copy.py: C methods where the compiled path
    runs): the common case, and calls off it that the C method hands to the Python method."""
    host = ol.devices(backend="host")[0]
    a, b, small, four = ol.Buffer(16, host), ol.Buffer(8, host), ol.Buffer(4, host), ol.Buffer(4, host)
    for buffer, data in ((a, b"0123456789ABCDEF"), (b, b"abcdefgh"), (small, b"wxyz"), (four, b"WXYZ")):
        buffer.copy_from(data)
    readonly = ol.Buffer.wrap(a.address, 16, host, "host", a, readonly=True, session=a._ctx)
    closed = ol.Buffer(8, host)
    closed.close()
    x, y = b.view("float32"), a.view("float32", 2, offset=4)
    queue = host.queue()

    def shown(call: Callable[[], Any]) -> Callable[[], Any]:  # the call, then the bytes of `a` and `small`
        return lambda: (call(), queue.sync(), a.to_bytes(), small.to_bytes())[2:]

    case("objects copy ok", shown(lambda: a.copy_from(b, offset=2)))
    case("objects copy on a queue", shown(lambda: a.copy_from(b, offset=8, queue=queue)))
    case("objects copy overrun", lambda: a.copy_from(b, offset=9))
    case("objects copy negative offset", lambda: a.copy_from(b, offset=-1))
    case("objects copy float offset", lambda: a.copy_from(b, offset=2.0))
    case("objects copy into read-only memory", lambda: readonly.copy_from(b))
    case("objects copy from a closed buffer", lambda: a.copy_from(closed))
    case("objects copy to a closed buffer", lambda: closed.copy_from(b))
    case("objects copy an int", lambda: a.copy_from(42))
    case("objects copy_to ok", shown(lambda: a.copy_to(small, offset=12, queue=queue)))
    case("objects copy_to overrun", lambda: a.copy_to(small, offset=13))
    case("objects copy_to read-only", lambda: b.copy_to(readonly))
    case("objects array copy ok", shown(lambda: y.copy_from(x)))
    case("objects array copy of another dtype", lambda: y.copy_from(b.view("int32")))
    case("objects queue copy ok", shown(lambda: queue.copy(small, four)))
    case("objects queue copy too large", lambda: queue.copy(small, b))
    case("objects queue copy arrays", shown(lambda: queue.copy(y, x)))
    case("objects queue copy closed", lambda: queue.copy(a, closed))
    queue.close()
    stale = ol.Buffer(8, host)  # a Buffer of a session that ends
    _session.release()
    fresh = ol.Buffer(8, ol.devices(backend="host")[0])
    case("objects copy from another session", lambda: fresh.copy_from(stale))
    case("objects copy into another session", lambda: stale.copy_from(fresh))
    case("objects copy_to another session", lambda: fresh.copy_to(stale))
    case("objects copy ok in the new session", lambda: fresh.copy_from(fresh))
    _session.release()


if __name__ == "__main__":
    main()
    sys.exit(0)
