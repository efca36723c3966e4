"""Programs and symbols: load, validate and unload images; kernels and global variables."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from .._values import info as _info
from .._core import ranges as _ranges
from .._core.allocations import Allocation
from .common import bytes_arg, call_each, callback_arg, fail, release_after_queued_work
from .._values.enums import ErrorCode, SymbolInfo, SymbolKind
from .._values.errors import OffloadError
from .contexts import context_for, context_owns
from .._core.handles import Context as ContextHandle
from .._core.handles import Device, Program, Symbol
from .._core.ranges import HOST_MAPPINGS
from .._core.session import Session
from .._values.types import KernelParam
from .._core.native import word as native_word

_SYMBOL_KINDS = frozenset(SymbolKind)


def olCreateProgram(ctx: Session, device: Device, data: Any, context: ContextHandle | None) -> Program:
    owner = context_for(ctx, context, device)
    data = bytes_arg(data, "ProgData")
    if not data:
        raise fail(ErrorCode.INVALID_BINARY, "the binary is empty (ProgDataSize == 0)")
    image = device.backend.load_binary(device.native, data)
    program: Program = Program._make(
        ctx, device=device, image=image, data=data, symbols={}, lock=threading.Lock(), context=owner
    )
    try:
        with context_owns(owner), device.lock:  # exactly one of this and a racing olDestroyContext succeeds
            device.programs.add(program)
    except OffloadError:
        program._ctx = None
        device.backend.unload_binary(device.native, image)
        raise
    return program


def olIsValidBinary(ctx: Session, device: Device, data: Any) -> bool:
    data = bytes_arg(data, "ProgData")
    if not data or "is_valid_binary" not in device.backend.implemented:
        return False
    return bool(device.backend.is_valid_binary(device.native, data))


def olDestroyProgram(ctx: Session, program: Program) -> None:
    """Unload a program once no work uses it: its global variables are retired (every range check
    refuses them from then on; a host program's are entered as retired ranges, the host's being
    plain host memory while the program lives), the copies that checked them before and the
    launches of its kernels running in other threads are waited for, then every busy queue of its
    device (the unload is queued behind the calling host function's own queue when called from
    one). The range cache is dropped once the image is unloaded."""
    device = program.device
    with device.lock:
        if program._ctx is None:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"{program!r} was destroyed")
        program._ctx = None
        device.programs.discard(program)
    with program.lock:
        for symbol in program.symbols.values():
            symbol._ctx = None
        variables = [s for s in program.symbols.values() if s.kind is SymbolKind.GLOBAL_VARIABLE and s.size > 0]
    if device.is_host:
        retired = [Allocation(device, None, s.address, s.address + s.size, program, True) for s in variables]
        retired = [a for a in retired if ctx.allocations.insert(a)]
        space = ctx.allocations
    else:
        retired = ctx.globals.retire_owned_by(program)
        space = ctx.globals
    holds = ctx.grace()
    delay = 0.0002
    while _launching(ctx, program):  # launches registered before their kernels were marked dead
        time.sleep(delay)
        delay = min(delay * 2, 0.01)
    release = functools.partial(_unload, ctx, device, program, space, retired)
    release_after_queued_work(ctx, [device], release, holds)


def _unload(ctx: Session, device: Device, program: Program, space: Any, retired: list[Allocation]) -> None:
    """Unload a destroyed program's image, then drop what the range checks knew of it."""
    try:
        device.backend.unload_binary(device.native, program.image)
    finally:
        HOST_MAPPINGS.forget()
        space.discard(retired)
        if space is not ctx.allocations:
            ctx.allocations.republish()  # the range cache's key: host segments may have covered the image


def _launching(ctx: Session, program: Program) -> bool:
    """Whether an olLaunchKernel of one of ``program``'s kernels is running (each registers its
    kernel in ``ctx.calls`` while it runs)."""
    return any(call.__class__ is Symbol and call.program is program for call in list(ctx.calls))


def olIterateSymbols(
    ctx: Session, program: Program, kind: Any, callback: Callable[[Symbol, Any], bool], user_data: Any
) -> None:
    """Call ``callback(symbol, user_data)`` for every symbol of ``kind`` the backend lists
    (``symbol_names``; UNSUPPORTED without it), in its order, until it returns False."""
    kind = _info.lookup(_SYMBOL_KINDS, SymbolKind, kind, "iterateSymbols kind", ctx.api_level)
    callback_arg(callback)
    device = program.device
    names = list(device.backend.symbol_names(device.native, program.image, kind))
    call_each((olGetSymbol(ctx, program, str(name), kind) for name in names), callback, user_data)


def olGetSymbol(ctx: Session, program: Program, name: Any, kind: Any) -> Symbol:
    kind = _info.lookup(_SYMBOL_KINDS, SymbolKind, kind, "getSymbol kind", ctx.api_level)
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode()
    if type(name) is not str or not name or "\0" in name:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Name must be a non-empty str, got {name!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate names no symbol any image can hold
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Name {name!r} cannot be encoded as UTF-8: {exc.reason}") from None
    key = (kind, name)
    device = program.device
    with program.lock:
        symbol = program.symbols.get(key)
        if symbol is not None:
            return symbol
        params: tuple[KernelParam, ...] | None = None
        args_size = None
        try:
            if kind is SymbolKind.KERNEL:
                native, address, size = device.backend.get_kernel(device.native, program.image, name), 0, 0
            else:
                native = None
                address, size = device.backend.get_global(device.native, program.image, name)
        except OffloadError as error:
            if error.code is not ErrorCode.NOT_FOUND:
                raise
            raise fail(ErrorCode.NOT_FOUND, error.details + _known_symbols(device, program, kind)) from None
        if kind is SymbolKind.KERNEL:
            params = _kernel_params(device, native, name)
            if params is not None:
                args_size = max((p.offset + p.size for p in params), default=0)
        else:
            address, size = int(address), int(size)
            if not device.is_host and size > 0:
                ctx.globals.insert(Allocation(device, None, address, address + size, program))
        symbol = Symbol._make(
            ctx, program=program, kind=kind, name=name, native=native, address=address, size=size,
            params=params, args_size=args_size, launch_device=program.device if kind is SymbolKind.KERNEL else None,
            word=None if native is None else native_word(device, native),
        )
        program.symbols[key] = symbol
        return symbol  # type: ignore[no-any-return]  # Symbol._make builds a Symbol (typed Any: it serves every handle class)


def _known_symbols(device: Device, program: Program, kind: SymbolKind) -> str:
    """``"; the program's kernels are 'a', 'b'"`` (or its globals), from the backend's
    ``symbol_names`` hook; empty without the hook or when it fails (the NOT_FOUND stands alone)."""
    if "symbol_names" not in device.backend.implemented:
        return ""
    try:
        names = sorted(str(n) for n in device.backend.symbol_names(device.native, program.image, kind))
    except Exception:  # the listing is a courtesy: the NOT_FOUND is the answer
        return ""
    what = "kernels" if kind is SymbolKind.KERNEL else "global variables"
    if not names:
        return f"; the program has no {what}"
    shown = ", ".join(repr(n) for n in names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return f"; the program's {what} are {shown}"


def _kernel_params(device: Device, kernel: Any, name: str) -> tuple[KernelParam, ...] | None:
    """The backend's ``kernel_params`` answer, checked (None: unknown, or no such hook)."""
    backend = device.backend
    if "kernel_params" not in backend.implemented:
        return None
    answer = backend.kernel_params(device.native, kernel)
    if answer is None:
        return None
    params = []
    for param in answer:
        param = param if isinstance(param, KernelParam) else KernelParam(*param)
        if type(param.offset) is not int or type(param.size) is not int or param.offset < 0 or param.size < 0:
            raise fail(ErrorCode.BACKEND_FAILURE, f"kernel_params of {name!r} gave an invalid parameter {param!r}")
        params.append(param)
    return tuple(params)


def symbol_info(ctx: Session, symbol: Symbol, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.SYMBOL_INFO, SymbolInfo, prop, "olGetSymbolInfo", ctx.api_level)
    kind = _info.SYMBOL_INFO[prop][0]
    if prop is SymbolInfo.KIND:
        return symbol.kind, kind
    if prop is SymbolInfo.NAME:
        return symbol.name, kind
    if symbol.kind is not SymbolKind.GLOBAL_VARIABLE:
        raise fail(
            ErrorCode.SYMBOL_KIND,
            f"OL_SYMBOL_INFO_{prop.name}: Expected a symbol of Kind OL_SYMBOL_KIND_GLOBAL_VARIABLE "
            f"but given a symbol of Kind OL_SYMBOL_KIND_{symbol.kind.name}",
        )
    return (symbol.address if prop is SymbolInfo.GLOBAL_VARIABLE_ADDRESS else symbol.size), kind
