"""Where a kernel's parameter layout comes from: the backend's ``kernel_params`` hook, which the
core asks once per kernel symbol (``_api.sessions.kernel_parameters``); the layer checks the answer
against the kinds it can pack, once per Symbol."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError
from .._api.flat import Symbol
from .._api.sessions import backend_name, kernel_parameters
from .._values.types import KernelParam

PARAM_KINDS = frozenset({"pointer", "int", "uint", "float", "bytes"})

_cache: weakref.WeakKeyDictionary[Symbol, tuple[KernelParam, ...] | None] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def checked_params(params: Sequence[Any], where: str) -> tuple[KernelParam, ...]:
    """``params`` as KernelParams, INVALID_ARGUMENT naming the first malformed one."""
    checked = []
    for i, p in enumerate(params):
        try:
            offset, size, kind, name, element, const = KernelParam(*p)
        except TypeError:
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{where}: parameter #{i} {p!r} is not a KernelParam") from None
        if (
            type(offset) is not int
            or type(size) is not int
            or offset < 0
            or size <= 0
            or kind not in PARAM_KINDS
            or not isinstance(name, str)
            or not (element is None or (isinstance(element, str) and kind == "pointer"))
            or type(const) is not bool
        ):
            raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"{where}: parameter #{i} {p!r} is malformed")
        checked.append(KernelParam(offset, size, kind, name, element, const))
    return tuple(checked)


def kernel_params(symbol: Symbol) -> tuple[KernelParam, ...] | None:
    """The kernel's parameters as its backend reports them, or None when it cannot tell."""
    with _lock:
        if symbol in _cache:
            return _cache[symbol]
    reported = kernel_parameters(symbol)
    params = None if reported is None else checked_params(reported, f"{backend_name(symbol)}: kernel_params of {symbol.name!r}")
    with _lock:
        _cache[symbol] = params
    return params
