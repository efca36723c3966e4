"""The implementation of every ``ol*`` function of ``_api.table``, by name: what the generated
entry points (``_api.functions``) call. Each function lives in the ``_api.<section>`` module of its
``hookspecs`` section; each ``olGet<X>Info`` / ``olGet<X>InfoSize`` pair is made here from one query.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import contexts as _api_contexts, devices as _api_devices, events as _api_events, kernels as _api_kernels, memory as _api_memory, memory_main as _api_memory_main, memory_async as _api_memory_async, programs as _api_programs, queues as _api_queues
from .._values import info as _info
from .._core.session import Session

InfoQuery = Callable[..., tuple[Any, _info.Kind]]  # (ctx, handle, prop, *more) -> (value, kind)

INFO_QUERIES: dict[str, InfoQuery] = {
    "Platform": _api_devices.platform_info,
    "Device": _api_devices.device_info,
    "Mem": _api_memory.mem_info,
    "Queue": _api_queues.queue_info,
    "Event": _api_events.event_info,
    "Symbol": _api_programs.symbol_info,
    "Context": _api_contexts.context_info,
}

# where a size query answers what its value query refuses (liboffload main: olGetMemInfoSize of a
# HOST allocation's DEVICE), the size query's own function
SIZE_QUERIES: dict[str, InfoQuery] = {"Mem": _api_memory.mem_info_size}

_SECTIONS = (
    _api_contexts, _api_devices, _api_memory, _api_memory_main, _api_memory_async, _api_queues, _api_events, _api_programs,
    _api_kernels,
)  # fmt: skip


def info_value(query: InfoQuery) -> Callable[..., Any]:
    """``olGet<X>Info``: the property's value."""

    def value(ctx: Session, handle: Any, prop: Any, *more: Any) -> Any:
        return query(ctx, handle, prop, *more)[0]

    return value


def info_size(query: InfoQuery) -> Callable[..., int]:
    """``olGet<X>InfoSize``: the property's C size in bytes."""

    def size(ctx: Session, handle: Any, prop: Any, *more: Any) -> int:
        value, kind = query(ctx, handle, prop, *more)
        return _info.c_size(kind, value)

    return size


def implementation(name: str) -> Callable[..., Any]:
    """The implementation of the table function ``name`` (KeyError for a name no section defines)."""
    info = re.fullmatch(r"olGet(\w+?)Info(Size)?", name)
    if info is not None:
        query = INFO_QUERIES[info[1]]
        return info_size(SIZE_QUERIES.get(info[1], query)) if info[2] else info_value(query)
    for section in _SECTIONS:
        found = getattr(section, name, None)
        if found is not None:
            return found  # type: ignore[no-any-return]
    raise KeyError(f"no implementation of {name}")
