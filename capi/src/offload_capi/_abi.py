"""One ABI level of liboffload's C API, described from offload's API table.

``llvm22()`` gives LLVM 22's (the ``OffloadAPI.h`` that Debian's ``liboffload-22-dev`` ships),
``r1()`` R1's and ``main()`` liboffload main's (contexts, ``olInit(const ol_init_args_t *)``,
per-argument kernel launches): which table functions each has, each parameter's C type, the ``.td`` validation conditions in liboffload's
order, and the C numbering of every enum. The header and C generators (``_header``, ``_csource``)
read only this description; the table is read here alone.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

from offload._api.table import FUNCTIONS
from offload._values.signatures import Function, Param
from offload._values.enums import (AllocType, DeviceFpCapabilityFlag, DeviceInfo, DeviceType, ErrorCode, EventInfo, MemInfo,
                                   MemoryRegisterFlag, PlatformBackend, PlatformInfo, QueueInfo, SymbolInfo, SymbolKind,
                                   ENUMS, MAIN_ONLY, _key, c_prefix, c_value)
from offload._values.info import CONTEXT_INFO, DEVICE_INFO, EVENT_INFO, MEM_INFO, PLATFORM_INFO, QUEUE_INFO, SYMBOL_INFO, Kind, c_type


class CParam(NamedTuple):
    """One C parameter: its name, C type, and what the C entry point does with it."""

    name: str
    ctype: str
    role: str  # the table's kind; "size_of" (a data/array size), "out", "prop_size", "prop_value"
    optional: bool = False
    handle: str | None = None  # "device", ... for handles and handle arrays / handle outs
    enum: str | None = None  # the C enum type for enum parameters
    out: str | None = None  # the table's Out kind for out-parameters
    size: str | None = None  # the C parameter holding the element count or byte size of an array or buffer
    py: int = -1  # the position of the Python argument it makes (the table's order; -1: none)


class CFunction(NamedTuple):
    name: str
    params: tuple[CParam, ...]
    checks: tuple[tuple[ErrorCode, str], ...]  # (code, C condition), in liboffload's order
    doc: str
    info: str | None = None  # "Device", ... for olGet*Info / olGet*InfoSize

    def by_role(self, role: str) -> CParam | None:
        """The first parameter of ``role`` (None: none)."""
        return next((p for p in self.params if p.role == role), None)


class CEnum(NamedTuple):
    ctype: str  # ol_device_info_t
    prefix: str  # OL_DEVICE_INFO_
    members: tuple[tuple[str, int, str], ...]  # (name, C number, doc)
    py: type[enum.Enum]


class Abi(NamedTuple):
    name: str
    soname: str
    version: tuple[int, int, int]  # OL_VERSION_MAJOR/MINOR/PATCH
    functions: tuple[CFunction, ...]
    enums: tuple[CEnum, ...]
    info_types: dict[str, dict[str, str]]  # "Device" -> {member name: C type of its value}


_HANDLE_TYPES = {"Platform": "platform", "Device": "device", "Queue": "queue", "Event": "event",
                 "Program": "program", "Symbol": "symbol", "Context": "context"}
_ENUM_PARAMS = {"Type": "ol_alloc_type_t", "Flags": "ol_memory_register_flags_t", "Kind": "ol_symbol_kind_t",
                "Flags@olCreateEvent": "ol_event_flags_t", "Flags@olMemPrefetch": "ol_mem_migration_flags_t"}
_CONST_POINTERS = {"SrcPtr", "Ptr@olGetMemInfo", "Ptr@olGetMemInfoSize"}
_CALLBACKS = {"olIterateDevices": "ol_device_iterate_cb_t", "olLaunchHostFunction": "ol_host_function_cb_t",
              "olIterateCompatibleDevices": "ol_device_iterate_cb_t", "olIteratePlatforms": "ol_platform_iterate_cb_t",
              "olIterateSymbols": "ol_symbol_iterate_cb_t"}
_OUT_NAMES = {"IsValid": "Valid"}  # LLVM 22's spelling where the table (R1) has another

# LLVM 22's functions: R1 less olQueryQueue, olGetEventElapsedTime and main's additions.
_LLVM22_FUNCTIONS = (
    "olCalculateOptimalOccupancy", "olCreateEvent", "olCreateProgram", "olCreateQueue", "olDestroyEvent",
    "olDestroyProgram", "olDestroyQueue", "olGetDeviceInfo", "olGetDeviceInfoSize", "olGetEventInfo",
    "olGetEventInfoSize", "olGetMemInfo", "olGetMemInfoSize", "olGetPlatformInfo", "olGetPlatformInfoSize",
    "olGetQueueInfo", "olGetQueueInfoSize", "olGetSymbol", "olGetSymbolInfo", "olGetSymbolInfoSize",
    "olIsValidBinary", "olIterateDevices", "olLaunchHostFunction", "olLaunchKernel", "olMemAlloc", "olMemFill",
    "olMemFree", "olMemRegister", "olMemUnregister", "olMemcpy", "olSyncEvent", "olSyncQueue", "olWaitEvents",
)
_LLVM22_DROPPED = {("olMemUnregister", "Flags")}  # R1 added it
_R1_ADDED = ("olQueryQueue", "olGetEventElapsedTime")  # R1's functions beyond LLVM 22's (the table's
# extensions, olMemAllocAsync and the like, are offload's and in no liboffload ABI)
# LLVM 22's own conditions where they differ from the table's (R1's): olMemFill has no PatternSize
# check (its FillSize % PatternSize divides by zero: offload refuses PatternSize == 0 first, a
# documented difference), olLaunchKernel checks its argument buffer.
_LLVM22_CHECKS: dict[str, tuple[tuple[ErrorCode, str], ...]] = {
    "olMemFill": ((ErrorCode.INVALID_SIZE, "PatternSize == 0"), (ErrorCode.INVALID_SIZE, "FillSize % PatternSize != 0")),
    "olLaunchKernel": ((ErrorCode.INVALID_ARGUMENT, "ArgumentsSize > 0 && ArgumentsData == NULL"),),
}
_LLVM22_DEVICE_INFO_ABSENT = {"NUM_LANES", "SINGLE_FP_SUPPORT", "DOUBLE_FP_SUPPORT", "HALF_FP_SUPPORT",
                              "COOPERATIVE_LAUNCH_SUPPORT", "DRIVER_ID"}
_INFO_TABLES: dict[str, dict[Any, tuple[Kind, type | None]]] = {"Platform": PLATFORM_INFO, "Device": DEVICE_INFO, "Queue": QUEUE_INFO, "Event": EVENT_INFO,
                "Mem": MEM_INFO, "Symbol": SYMBOL_INFO, "Context": CONTEXT_INFO}
_LLVM22_ENUMS: tuple[tuple[type[enum.Enum], frozenset[str]], ...] = (
    (AllocType, frozenset()),
    (DeviceFpCapabilityFlag, frozenset()),
    (DeviceInfo, frozenset(_LLVM22_DEVICE_INFO_ABSENT)),
    (DeviceType, frozenset()),
    (ErrorCode, frozenset({"INVALID_CONTEXT"})),
    (EventInfo, frozenset()),
    (MemInfo, frozenset()),
    (PlatformBackend, frozenset()),
    (PlatformInfo, frozenset()),
    (QueueInfo, frozenset({"CONTEXT"})),
    (SymbolInfo, frozenset({"NAME"})),
    (SymbolKind, frozenset()),
)


def enum_ctype(cls: type[enum.Enum]) -> str:
    """The C typedef of an enum class (``ol_errc_t`` for ErrorCode)."""
    return "ol_errc_t" if cls is ErrorCode else c_type(Kind.ENUM, cls)


def _param_type(fn: Function, p: Param) -> CParam:
    if p.kind in ("handle", "context"):
        handle = _HANDLE_TYPES[p.handle.__name__.removesuffix('Handle')]  # type: ignore[union-attr]
        return CParam(p.c, f"ol_{handle}_handle_t", "handle", p.optional, handle=handle)
    if p.kind == "pointer":
        const = p.c in _CONST_POINTERS or f"{p.c}@{fn.name}" in _CONST_POINTERS
        return CParam(p.c, "const void *" if const else "void *", "pointer", p.optional)
    if p.kind in ("data", "kernel_args"):
        return CParam(p.c, "const void *", "data", p.optional, size=p.size_name)
    if p.kind == "size":
        return CParam(p.c, "size_t", "size", p.optional)
    if p.kind == "enum":
        ctype = (_ENUM_PARAMS.get(f"{p.c}@{fn.name}") or _ENUM_PARAMS.get(p.c)
                 or f"ol_{fn.name[5:-4].lower() if fn.name.endswith('Info') else fn.name[5:-8].lower()}_info_t")
        return CParam(p.c, ctype, "enum", p.optional, enum=ctype)
    if p.kind == "callback":
        return CParam(p.c, _CALLBACKS[fn.name], "callback", p.optional)
    if p.kind == "any" and p.c == "Properties":  # main's olLaunchKernel: a list ended by OL_KERNEL_LAUNCH_PROP_TYPE_NONE
        return CParam(p.c, "const ol_kernel_launch_prop_t *", "properties", True)
    if p.kind == "any":
        return CParam(p.c, "void *", "any", True)
    if p.kind == "string":
        return CParam(p.c, "const char *", "string", p.optional)
    if p.kind == "events":
        return CParam(p.c, "ol_event_handle_t *", "events", p.optional, handle="event", size=p.size_name)
    if p.kind == "handles":
        handle = _HANDLE_TYPES[p.c.removesuffix("s")]
        return CParam(p.c, f"const ol_{handle}_handle_t *", "handles", p.optional, handle=handle, size=p.size_name)
    if p.kind == "array":  # olMemPrefetch's Mems (addresses) and Sizes, counted by Count
        ctype, role = ("void **", "pointers") if p.c == "Mems" else ("const size_t *", "sizes")
        return CParam(p.c, ctype, role, p.optional, size=p.size_name or "Count")
    if p.kind == "struct" and p.c == "LaunchSizeArgs":
        return CParam(p.c, "const ol_kernel_launch_size_args_t *", "launch_size", p.optional)
    raise ValueError(f"{fn.name}: no C type for parameter {p.c} of kind {p.kind}")


# main's olLaunchKernel takes its arguments one by one, after the others (the table's kernel_args)
_MAIN_KERNEL_ARGS = (CParam("NumArgs", "size_t", "size_of"), CParam("ArgPtrs", "const void **", "arg_ptrs", True, size="NumArgs"),
                     CParam("ArgSizes", "const size_t *", "arg_sizes", True, size="NumArgs"))


def _c_params(fn: Function, dropped: set[tuple[str, str]], level: str) -> tuple[CParam, ...]:
    """The C parameters in C order, each that makes a Python argument knowing its place in the
    table's (the Python) order: at main, the Context first and the kernel arguments last."""
    out: list[CParam] = []
    first: list[CParam] = []
    last: list[CParam] = []
    for index, p in enumerate(fn.params):
        if (p.level == "main" and level != "main") or (fn.name, p.c) in dropped:
            continue
        if p.kind == "kernel_args" and level == "main":
            last += [q._replace(py=index) if q.role == "arg_ptrs" else q for q in _MAIN_KERNEL_ARGS]
            continue
        cp = _param_type(fn, p)._replace(py=index)
        if p.kind == "context":
            first.append(cp)
        elif p.size_name is not None:
            size = CParam(p.size_name, "size_t", "size_of")
            out += [size, cp] if p.size_first else [cp, size]
        else:
            out.append(cp)
    out = first + out + last
    if fn.out is not None:
        o = fn.out
        if o.kind == "info":
            out += [CParam("PropSize", "size_t", "prop_size"), CParam("PropValue", "void *", "prop_value")]
        elif o.kind == "handle":
            h = o.c.lower()
            out.append(CParam(o.c, f"ol_{h}_handle_t *", "out", out="handle", handle=h))
        elif o.kind == "pointer":
            out.append(CParam(o.c, "void **", "out", out="pointer"))
        elif o.kind == "size":
            out.append(CParam(o.c, "size_t *", "out", out="size"))
        elif o.kind == "bool":
            out.append(CParam(_OUT_NAMES.get(o.c, o.c) if fn.name == "olIsValidBinary" else o.c, "bool *", "out", out="bool"))
        elif o.kind == "float":
            out.append(CParam(o.c, "float *", "out", out="float"))
        else:
            raise ValueError(f"{fn.name}: no C out-parameter of kind {o.kind}")
    return tuple(out)


def _checks(fn: Function, params: tuple[CParam, ...], own: tuple[tuple[ErrorCode, str], ...]) -> tuple[tuple[ErrorCode, str], ...]:
    """liboffload's generated order: the function's own conditions, then ``NULL == <handle>`` for
    each non-optional handle, then ``NULL == <pointer>`` for each non-optional pointer/callback."""
    checks = list(own)
    if any(p.role == "prop_size" for p in params):
        checks.append((ErrorCode.INVALID_SIZE, "PropSize == 0"))
    checks += [(ErrorCode.INVALID_NULL_HANDLE, f"NULL == {p.name}") for p in params if p.role == "handle" and not p.optional]
    pointer_roles = ("pointer", "data", "callback", "string", "events", "handles", "pointers", "sizes", "launch_size", "out",
                     "prop_value")
    checks += [(ErrorCode.INVALID_NULL_POINTER, f"NULL == {p.name}") for p in params
               if p.role in pointer_roles and not p.optional and not (p.role == "data" and p.name == "ArgumentsData")]
    return tuple(checks)


def _info_of(name: str) -> str | None:
    if name.startswith("olGet") and (name.endswith("Info") or name.endswith("InfoSize")):
        return name[5:].split("Info")[0]
    return None


def _enums(spec: tuple[tuple[type[enum.Enum], frozenset[str]], ...], level: str) -> tuple[CEnum, ...]:
    out = []
    for cls, absent in spec:
        members = [m for m in cls if m.name not in absent]
        flag = issubclass(cls, enum.IntFlag)
        if level == "main":  # main's own numbering (c_value), in its order
            numbered = tuple(sorted(((m.name, c_value(m, "main"), "") for m in members), key=lambda e: e[1]))
            out.append(CEnum(enum_ctype(cls), c_prefix(cls), numbered, cls))
            continue
        numbered = tuple((m.name, int(m.value) if flag else i, "") for i, m in enumerate(members))
        if not flag:
            assert all(n == int(m.value) for (_, n, _), m in zip(numbered, members)) or cls is DeviceInfo, cls
        out.append(CEnum(enum_ctype(cls), c_prefix(cls), numbered, cls))
    return tuple(out)


def _info_types(enums: tuple[CEnum, ...]) -> dict[str, dict[str, str]]:
    present = {e.py: {n for n, _, _ in e.members} for e in enums}
    types: dict[str, dict[str, str]] = {}
    for what, table in _INFO_TABLES.items():
        cls = type(next(iter(table)))
        if cls not in present:  # ContextInfo before main
            continue
        types[what] = {}
        for member, (kind, enum_type) in table.items():
            if member.name not in present[cls]:
                continue
            if kind is Kind.HANDLE:
                types[what][member.name] = f"ol_{member.name.lower()}_handle_t"
            elif kind is Kind.HANDLES:  # OL_CONTEXT_INFO_DEVICES
                types[what][member.name] = "ol_device_handle_t[]"
            elif kind is Kind.ENUM and enum_type is DeviceFpCapabilityFlag:
                types[what][member.name] = "ol_device_fp_capability_flags_t"
            elif kind is Kind.ENUM and enum_type is None and member is SymbolInfo.KIND:
                types[what][member.name] = "ol_symbol_kind_t"
            else:
                types[what][member.name] = c_type(kind, enum_type)
    return types


def _abi(name: str, soname: str, names: list[str], dropped: set[tuple[str, str]],
         checks: dict[str, tuple[tuple[ErrorCode, str], ...]], enum_spec: tuple[tuple[type[enum.Enum], frozenset[str]], ...]) -> Abi:
    by_name = {fn.name: fn for fn in FUNCTIONS}
    level = "main" if name == "main" else "r1"
    functions = []
    for fn_name in names:
        fn = by_name[fn_name]
        params = _c_params(fn, dropped, level)
        own = checks.get(fn_name, tuple((c.code, c.c_text) for c in fn.checks))
        functions.append(CFunction(fn_name, params, _checks(fn, params, own), fn.doc, _info_of(fn_name)))
    init = (CParam("InitArgs", "const ol_init_args_t *", "init_args", True),) if level == "main" else ()
    functions.append(CFunction("olInit", init, (), "Perform initialization of the Offload library and plugins."))
    functions.append(CFunction("olShutDown", (), (), "Release the resources in use by Offload."))
    functions.sort(key=lambda f: f.name)
    enums = _enums(enum_spec, level)
    return Abi(name, soname, (0, 0, 1), tuple(functions), enums, _info_types(enums))


def llvm22() -> Abi:
    """LLVM 22's ABI (``libLLVMOffload.so.22.1``)."""
    return _abi("llvm22", "libLLVMOffload.so.22.1", sorted(_LLVM22_FUNCTIONS), _LLVM22_DROPPED, _LLVM22_CHECKS, _LLVM22_ENUMS)


def r1() -> Abi:
    """R1's ABI (liboffload of early 2026, LLVM 23 in development: ``libLLVMOffload.so.23.0git``):
    LLVM 22's functions and R1's two more, with R1's parameters, conditions and numbering."""
    names = [*_LLVM22_FUNCTIONS, *_R1_ADDED]
    spec = tuple((cls, frozenset(m.name for m in cls if _key(m) in MAIN_ONLY)) for cls, _ in _LLVM22_ENUMS)
    spec += ((MemoryRegisterFlag, frozenset()),)
    return _abi("r1", "libLLVMOffload.so.23.0git", sorted(names), set(), {}, tuple(sorted(spec, key=lambda e: enum_ctype(e[0]))))


# The table's functions that no liboffload ABI has (offload's extensions) or whose C form main has
# not settled (olMemcpyRect: an open PR's ol_memcpy_rect_t; olPlatformRegisterRPCCallback: refused
# by offload, its callback type a libc RPC server's)
_NOT_IN_MAIN = {"olMemAllocAsync", "olMemFreeAsync", "olGetKernelParamsExt", "olMemcpyRect", "olPlatformRegisterRPCCallback"}
# main's olLaunchKernel: one argument pointer and size per kernel parameter (the table's optional
# ``args``: both NULL with NumArgs 0), checked as LLVM 22 checks its argument buffer
_MAIN_CHECKS: dict[str, tuple[tuple[ErrorCode, str], ...]] = {
    "olLaunchKernel": ((ErrorCode.INVALID_ARGUMENT, "NumArgs > 0 && (ArgPtrs == NULL || ArgSizes == NULL)"),),
}


def main() -> Abi:
    """liboffload main's ABI (after R1; ``libLLVMOffload.so.23.0git`` too): R1's functions and
    main's additions (contexts, host and aligned allocations, prefetch, symbol and platform
    iteration, cooperative launch limits), the optional Context first where the table has one,
    ``olInit(const ol_init_args_t *)``, ``olCreateEvent``'s Flags, ``olLaunchKernel`` with launch
    properties and per-argument pointers and sizes, and main's numbering (``c_value(.., "main")``)."""
    names = [fn.name for fn in FUNCTIONS if fn.name not in _NOT_IN_MAIN]
    spec: tuple[tuple[type[enum.Enum], frozenset[str]], ...] = tuple((cls, frozenset()) for cls in ENUMS)
    return _abi("main", "libLLVMOffload.so.23.0git", sorted(names), set(), _MAIN_CHECKS,
                tuple(sorted(spec, key=lambda e: enum_ctype(e[0]))))


ABIS = {"llvm22": llvm22, "r1": r1, "main": main}
"""Every ABI level offload-capi builds, by name."""
