"""Memory-safety scenarios of copies (run by scenarios.py in a child of their own): olMemcpyRect
past an allocation or a source row, and the range cache after a free, a free from a host
function and a destroyed program."""

from __future__ import annotations

import ctypes
from typing import Any

import offload as ol

from scenario_kit import A, buffer, host_device, mapped, outcome, read, rect_outcome, scenario


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
    code = rect_outcome(None, ol.Rect(dst, host, (0, 0, 0), 4096, 0), ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 8, 0), (8, 1 << 20, 1))
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
            code = rect_outcome(
                queue, ol.Rect(dst, host, (0, 0, 0), 4096, 0), ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 4096, 0), (64, 4, 1)
            )
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
        code = rect_outcome(queue, ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 64, 0), ol.Rect(src, host, (0, 0, 0), 48, 0), (40, 2, 1))
        results["queued" if queued else "sync"] = [code, bytes(dst) == bytes(256)]
    # the same rect within bounds copies every row
    dst = buffer(256)
    code = rect_outcome(None, ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 64, 0), ol.Rect(src, host, (0, 0, 0), 24, 0), (20, 2, 1))
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
