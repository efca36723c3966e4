"""The Python side of the C ABI: what ``libLLVMOffload.so`` calls, with the GIL held.

``tables(abi, names, device_info)`` gives a library its two tables: one callable per generated
entry point (the order of ``names``, which the library gives: its level's functions), offload's flat
functions themselves where the C arguments map onto them one to one; and the info queries, which
answer the C bytes of a property (``INFO_KINDS`` order). The library says its level's functions and
numbering itself, so that starting it reads no API table (start-up). ``HANDLES`` is the registry
that keeps every handle given to C alive: a C handle is the address of its Python object, so trace
lines (``id()``) show the C pointers. ``init``/``shut_down`` wrap olInit/olShutDown.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Any

import offload
from offload import KernelLaunchSizeArgs  # noqa: F401 (read by the library)
from offload._values.enums import (ContextInfo, DeviceInfo, ErrorCode, EventInfo, MemInfo, PlatformBackend, PlatformInfo,
                                   QueueInfo, SymbolInfo, from_c)
from offload._values.errors import OffloadError
from offload._values.info import CONTEXT_INFO, DEVICE_INFO, EVENT_INFO, MEM_INFO, PLATFORM_INFO, QUEUE_INFO, SYMBOL_INFO, Kind

HANDLES: dict[int, Any] = {}
INFO_KINDS = ("Platform", "Device", "Queue", "Event", "Mem", "Symbol", "Context")
_ENUM_OF = {"Platform": PlatformInfo, "Device": DeviceInfo, "Queue": QueueInfo, "Event": EventInfo, "Mem": MemInfo,
            "Symbol": SymbolInfo, "Context": ContextInfo}
_TABLES: dict[str, dict[Any, tuple[Kind, Any]]] = {
    "Platform": PLATFORM_INFO, "Device": DEVICE_INFO, "Queue": QUEUE_INFO, "Event": EVENT_INFO, "Mem": MEM_INFO,
    "Symbol": SYMBOL_INFO, "Context": CONTEXT_INFO,
}
_WHAT = {"Platform": "getPlatformInfo", "Device": "getDeviceInfo"}
_U32, _U64, _DIMS = struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<III")


def _register(obj: Any) -> int:
    HANDLES[id(obj)] = obj
    return id(obj)


def _encode(kind: Kind, value: Any) -> bytes:
    """The C representation of one property value (``_info``'s kinds)."""
    if kind is Kind.STRING:
        return str(value).encode() + b"\0"
    if kind in (Kind.U32, Kind.ENUM):
        return _U32.pack(int(value))
    if kind in (Kind.U64, Kind.SIZE, Kind.POINTER):
        return _U64.pack(int(value or 0))
    if kind is Kind.BOOL:
        return b"\1" if value else b"\0"
    if kind is Kind.HANDLE:
        return _U64.pack(0 if value is None else _register(value))
    if kind is Kind.HANDLES:
        return b"".join(_U64.pack(_register(item)) for item in value)
    if kind is Kind.DIMENSIONS:
        return _DIMS.pack(*value)
    raise OffloadError(ErrorCode.UNIMPLEMENTED, f"offload-capi: no C form for a {kind.value} property")


def _info(what: str, device_info: dict[int, DeviceInfo], level: str) -> Callable[..., bytes]:
    query = getattr(offload, f"olGet{what}Info")
    cls, table = _ENUM_OF[what], _TABLES[what]

    def info(handle: Any, prop: int, *context: Any) -> bytes:
        member: Any
        if what == "Device":  # each ABI numbers its device properties (LLVM 22: without R1's additions)
            member = device_info.get(prop)
            if member is None:
                raise OffloadError(ErrorCode.INVALID_ENUMERATION, f"getDeviceInfo enum '{prop}' is invalid")
            value = query(handle, member)
        else:  # the session reads the number at its level (main's olGetMemInfo: and a Context)
            value = query(handle, prop, *context)
            member = from_c(cls, prop, level)
        return _encode(table[member][0], value)

    info.__name__ = f"c_olGet{what}Info"
    return info


def _mem_unregister(device: Any, ptr: int) -> None:
    """LLVM 22's olMemUnregister has no Flags (R1's is 0 here: plain unregistering)."""
    offload.olMemUnregister(device, ptr, 0)


_OWN: dict[tuple[str, str], Callable[..., Any]] = {("llvm22", "olMemUnregister"): _mem_unregister}


def tables(abi_name: str, names: list[str], device_info: dict[int, str]) -> tuple[tuple[Callable[..., Any], ...], tuple[Callable[..., bytes], ...]]:
    """(the entry points' callables, the info queries) of ABI level ``abi_name``: ``names``, its
    functions in the library's order; ``device_info``, its device properties' C numbers and names."""
    members = {number: DeviceInfo[name] for number, name in device_info.items()}
    calls = tuple(_OWN.get((abi_name, name)) or getattr(offload, name) for name in names)
    level = "main" if abi_name == "main" else "r1"
    return calls, tuple(_info(what, members, level) for what in INFO_KINDS)


def init(c_traces: bool, platforms: list[int] | None = None, main: bool = False) -> tuple[bool, bool]:
    """olInit; (tracing, validating) of the session. ``c_traces``: the library prints liboffload's
    trace lines itself, so offload's own tracer stays off for this session (OFFLOAD_TRACE hidden).
    ``main``: the library is main's (the session's API level), ``platforms`` its ol_init_args_t's
    platform backends (None: every one)."""
    from offload._core.session import STATE

    args = None
    if main:
        try:
            chosen = None if platforms is None else tuple(PlatformBackend(number) for number in platforms)
        except ValueError as exc:
            raise OffloadError(ErrorCode.INVALID_ENUMERATION, f"InitArgs->Platforms holds an unknown backend: {exc}") from None
        args = offload.InitArgs(chosen, api_level="main")
    hidden = os.environ.pop("OFFLOAD_TRACE", None) if c_traces else None
    try:
        offload.olInit(args)
    finally:
        if hidden is not None:
            os.environ["OFFLOAD_TRACE"] = hidden

    ctx = STATE.ctx
    return (bool(ctx.trace), bool(ctx.validate)) if ctx is not None else (False, True)


def shut_down() -> None:
    offload.olShutDown()
