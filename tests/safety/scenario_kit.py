"""What the memory-safety scenarios share (tests/safety/scenarios_*.py): their registry (the
``scenario`` decorator), the outcome of a call, the host device, checks of the process's
mappings and of bytes, and ``main``, which scenarios.py runs in the child."""

from __future__ import annotations

import ctypes
import json
import sys
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


def rect_outcome(queue: ol.QueueHandle | None, dst: ol.Rect, src: ol.Rect, region: tuple[int, int, int]) -> str:
    """olMemcpyRect's outcome ('OK' or the error code's name); on a queue, once the queue ran it
    (the queue is then destroyed)."""
    code = outcome(ol.olMemcpyRect, queue, dst, src, region)
    if queue is not None:
        ol.olSyncQueue(queue)
        ol.olDestroyQueue(queue)
    return code


def main() -> None:
    name = sys.argv[1]
    ol.olInit()
    result = SCENARIOS[name]()
    ol.olShutDown()
    print("RESULT " + json.dumps(result), flush=True)
