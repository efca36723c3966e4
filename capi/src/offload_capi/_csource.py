"""The C entry points of every ABI level in one source, from ``_abi`` (liboffload's EntryPointGen,
for C over Python). A piece that differs between levels (a function one level lacks, another
signature, another condition, an enumerator) is under ``#if CAPI_ABI == CAPI_ABI_<LEVEL>``;
``setup.py`` compiles the source once per level, with ``-DCAPI_ABI=CAPI_ABI_<LEVEL>`` and that
level's header, whose enumerators number the tables (so one table serves every numbering).

Each ``olX`` (and ``olXWithCodeLoc``) does what liboffload's generated wrapper does, in its order:
the initialisation check, then (validation on) the ``.td`` conditions, the NULL handle checks and
the NULL pointer checks, each failing with ``validation failure: <condition>``; then the call. The
info queries go to ``capi_info`` (platform and device answers cached in C); every other call
converts its arguments, calls the bridge's function (offload's flat API) with the GIL held, and
writes its out-parameter. ``capi_*`` is the hand-written runtime (``capi/csrc/capi.h``).
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence

from ._abi import Abi, CFunction, CParam

_INFO_KINDS = ("Platform", "Device", "Queue", "Event", "Mem", "Symbol", "Context")  # _bridge.INFO_KINDS
_INVALID = {"platform": "OL_ERRC_INVALID_PLATFORM", "device": "OL_ERRC_INVALID_DEVICE",
            "queue": "OL_ERRC_INVALID_QUEUE", "event": "OL_ERRC_INVALID_EVENT", "context": "OL_ERRC_INVALID_CONTEXT"}
_DESTROYS = {"olDestroyQueue", "olDestroyEvent", "olDestroyProgram", "olDestroyContext"}


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _signature(fn: CFunction) -> str:
    return ", ".join(f"{p.ctype}{p.name}" if p.ctype.endswith("*") else f"{p.ctype} {p.name}" for p in fn.params) or "void"


def _invalid(handle: str | None) -> str:
    return _INVALID.get(handle or "", "OL_ERRC_INVALID_ARGUMENT")


def _validation(fn: CFunction) -> list[str]:
    if not fn.checks:
        return []
    lines = ["    if (capi_validate) {"]
    for code, cond in fn.checks:  # the condition's text is its message: capi_error's, not a macro's #cond
        lines.append(f"        if ({cond}) return capi_error(OL_ERRC_{code.name}, {_c_string('validation failure: ' + cond)});")
    lines.append("    }")
    return lines


def _info_body(fn: CFunction) -> list[str]:
    """capi_info of the queried handle (a Mem query's: its pointer) and, at main, a Mem query's Context."""
    what = fn.info or ""
    context = next((p for p in fn.params if p.name == "Context" and what != "Context"), None)
    handle = next(p for p in fn.params if p.role in ("handle", "pointer") and p is not context)
    prop = fn.by_role("enum")
    assert prop is not None, fn.name
    which = _INFO_KINDS.index(what)
    cacheable = "true" if what in ("Platform", "Device") else "false"
    sized = fn.name.endswith("Size")
    tail = "PropSizeRet" if sized else "NULL"
    value = "0, NULL" if sized else "PropSize, PropValue"
    return [f"    return capi_info({which}, {cacheable}, {handle.name}, {_invalid(handle.handle)}, {_c_string(handle.name)}, "
            f"(uint32_t){prop.name}, {value}, {tail}, {context.name if context else 'NULL'});"]


# role -> the C expression converting a parameter of that role (its name: {name}), and its printer
_CONVERSIONS = {"pointer": "PyLong_FromVoidPtr((void *){name})", "size": "PyLong_FromSize_t((size_t){name})",
                "enum": "PyLong_FromSize_t((size_t){name})", "string": "capi_string({name})",
                "events": "capi_handles((const void *const *){name}, {size}, {invalid}, {what}, &res)", "launch_size": "capi_launch_size({name}, &res)",
                "data": "capi_bytes({name}, {size})", "pointers": "capi_pointers((void *const *){name}, {size})",
                "sizes": "capi_sizes({name}, {size})", "properties": "capi_launch_properties({name}, &res)",
                "arg_ptrs": "capi_arguments({name}, ArgSizes, {size})",
                "handles": "capi_handles((const void *const *){name}, {size}, {invalid}, {what}, &res)"}
_U64 = "capi_tp_u64(&b, {quoted}, (uint64_t){name});"
_PRINTERS = {"size": _U64, "size_of": _U64, "prop_size": _U64, "enum": _U64, "string": "capi_tp_str(&b, {quoted}, {name});",
             "events": "capi_tp_events(&b, {quoted}, {name}, {size});", "launch_size": "capi_tp_launch(&b, {quoted}, {name});"}


def _argument(p: CParam, params: tuple[CParam, ...], i: int) -> str | None:
    """The C expression making Python argument ``i`` from ``p`` (None: no Python argument)."""
    if p.role in ("size_of", "any", "out", "arg_sizes"):
        return None
    if p.role == "handle":
        return f"capi_handle_in({p.name}, {_invalid(p.handle)}, {_c_string(p.name)}, &res)"
    if p.role in _CONVERSIONS:
        return _CONVERSIONS[p.role].format(name=p.name, size=p.size, invalid=_invalid(p.handle),
                                           what=_c_string((p.handle or "").capitalize()))
    if p.role == "callback":
        user = next(q.name for q in params if q.role == "any")
        if "iterate" in p.ctype:  # every iteration callback is bool(handle, user data)
            return f"capi_iterate_callback((capi_iterate_cb){p.name}, {user})"
        return f"capi_host_callback({p.name}, {user})"
    raise ValueError(f"no conversion for {p.name} ({p.role})")


def _call_body(fn: CFunction) -> list[str]:
    """Convert, call the bridge's function with the GIL held, write the out-parameter (capi.h's
    CAPI_BEGIN .. CAPI_END)."""
    made = [(p.py, _argument(p, fn.params, i)) for i, p in enumerate(fn.params)]
    args = [a for _, a in sorted(made, key=lambda m: m[0]) if a is not None]  # the Python (table) order
    extra = 1 if any(p.role == "callback" for p in fn.params) else 0  # UserData: folded into the callback
    out = next((p for p in fn.params if p.role == "out"), None)
    n = len(args) + extra
    lines = [f"    CAPI_BEGIN({max(n, 1)});"]
    lines += [f"    CAPI_ARG({i}, {expr});" for i, expr in enumerate(args)]
    if extra:
        lines.append(f"    CAPI_NONE({len(args)});")
    lines.append(f"    CAPI_INVOKE(CAPI_FN_{fn.name}, {n});")
    if out is not None:
        if out.out == "handle":
            lines.append(f"    capi_handle_out(r, (void **){out.name}, &res);")
        else:
            target = "(void **)" if out.out == "pointer" else ""
            lines.append(f"    capi_out_{out.out}(r, {target}{out.name}, &res);")
    if fn.name in _DESTROYS:
        lines.append(f"    capi_handle_forget({fn.params[0].name});")
    lines.append(f"    CAPI_END({max(n, 1)});")
    return lines


def _trace_param(p: CParam, fn: CFunction, enums: set[str]) -> str:
    """The capi_tp_* call printing ``p`` as liboffload's printer does."""
    name = _c_string(p.name)
    if p.role == "callback":
        return f"capi_tp_fn(&b, {name}, (const void *)(uintptr_t){p.name});"
    if p.role in ("handle", "any", "data", "pointer", "properties", "init_args"):
        return f"capi_tp_ptr(&b, {name}, (const void *){p.name});"
    if p.role in ("handles", "pointers", "arg_ptrs", "sizes", "arg_sizes"):  # main's arrays: as offload's tracer at main
        return f"capi_tp_array(&b, {name}, {p.name}, {p.size}, {'true' if 'sizes' in p.role else 'false'});"
    if p.role == "enum" and p.ctype in enums:
        return f"capi_tp_enum(&b, {name}, {_enum_id(p.ctype)}, (uint32_t){p.name});"
    if p.role in _PRINTERS:  # an enum not in `enums` is a bit field: its uint32_t typedef
        return _PRINTERS[p.role].format(quoted=name, name=p.name, size=p.size)
    if p.role == "out":
        kind = {"handle": "outptr", "pointer": "outptr", "size": "outsize", "bool": "outbool", "float": "outfloat"}[p.out or ""]
        cast = "(void *const *)" if kind == "outptr" else ""
        return f"capi_tp_{kind}(&b, {name}, {cast}{p.name});"
    if p.role == "prop_value":
        return f"capi_tp_info(&b, {name}, info_type_{fn.info}((uint32_t)PropName), PropValue);"
    raise ValueError(f"no trace printer for {p.name} ({p.role})")


def _function(fn: CFunction, enums: set[str]) -> list[str]:
    """``olX_impl`` (checks, then the call), ``olX_call`` (traced when OFFLOAD_TRACE asks:
    ``---> olX`` before the call, as liboffload prints it, except olInit's, printed once it has
    initialised) and the exported ``olX``/``olXWithCodeLoc`` (capi.h's CAPI_TRACED, CAPI_EXPORTS)."""
    names = ", ".join(p.name for p in fn.params)
    sig = _signature(fn)
    lines = [f"static ol_result_t {fn.name}_impl({sig}) {{"]
    if fn.name == "olInit" and fn.params:  # main's: the platforms to bring up (NULL: every one)
        lines.append("    return InitArgs ? capi_init((const uint32_t *)InitArgs->Platforms, InitArgs->NumPlatforms, true)"
                     " : capi_init(NULL, 0, true);")
    elif fn.name == "olInit":
        lines.append("    return capi_init(NULL, 0, false);")
    elif fn.name == "olShutDown":
        lines.append("    return capi_shutdown();")
    else:
        lines.append("    CAPI_UNLESS_READY();")
        lines += _validation(fn)
        lines += _info_body(fn) if fn.info else _call_body(fn)
    lines.append("}")
    if fn.name == "olInit":  # traced after the call: tracing is known once it has initialised
        traces = " ".join(_trace_param(p, fn, enums) for p in fn.params)
        lines += [f"static ol_result_t olInit_call({sig}) {{", f"    ol_result_t res = olInit_impl({names});",
                  "    if (!capi_trace_on()) return res;", '    capi_trace_open("olInit");', "    capi_tb b;",
                  f"    if (capi_tb_init(&b)) {{ {traces} capi_tb_close(&b, res); }}".replace("{  ", "{ "), "    return res;", "}"]
    else:
        traces = " ".join(_trace_param(p, fn, enums) for p in fn.params)
        lines.append(f"CAPI_TRACED({fn.name}, ({sig}), ({names}), ({traces}))")
    loc_sig = (sig + ", " if fn.params else "") + "ol_code_location_t *CodeLocation"
    lines += [f"CAPI_EXPORTS({fn.name}, ({sig}), ({loc_sig}), ({names}))", ""]
    return lines


_SIMPLE_TYPES = {"ol_device_handle_t[]": "CAPI_T_HANDLE", "char[]": "CAPI_T_STRING", "uint32_t": "CAPI_T_U32", "uint64_t": "CAPI_T_U64", "size_t": "CAPI_T_U64",
                 "bool": "CAPI_T_BOOL", "ol_dimensions_t": "CAPI_T_DIMENSIONS", "void *": "CAPI_T_POINTER",
                 "ol_device_fp_capability_flags_t": "CAPI_T_U32"}

Piece = tuple[Hashable, str]  # (what it is, its C text at one level)


def _enum_id(ctype: str) -> str:
    return f"CAPI_E_{ctype.upper()}"


def _pieces(abi: Abi) -> list[Piece]:
    """``abi``'s source as keyed pieces, in order: the same key names the same thing at every level."""
    enums = {e.ctype for e in abi.enums}
    out: list[Piece] = [("abi", f'const char capi_abi[] = "{abi.name}"; /* the bridge\'s name for this level */')]
    out += [(("E", e.ctype), f"    {_enum_id(e.ctype)},") for e in abi.enums]
    out += [(("F", fn.name), f"    CAPI_FN_{fn.name},") for fn in abi.functions]
    out += [(("f", fn.name), f'    "{fn.name}",') for fn in abi.functions]
    device = next(e for e in abi.enums if e.ctype == "ol_device_info_t")
    out += [(("d", name), f"    D({name})") for name, _, _ in device.members]
    errc = next(e for e in abi.enums if e.ctype == "ol_errc_t")
    invalid_context = "OL_ERRC_INVALID_CONTEXT" if "INVALID_CONTEXT" in {n for n, _, _ in errc.members} else "OL_ERRC_INVALID_ARGUMENT"
    out.append(("c", f"const ol_errc_t capi_invalid_context = {invalid_context}; /* a Context that is no live handle */"))
    out += [(("x", name), f"    [{int(errc.py[name].value)}] = OL_ERRC_{name},") for name, _, _ in errc.members]
    for e in abi.enums:  # capi_enum_name: enumerators by their header names (each level's numbers)
        out.append((("e", e.ctype, 0), f"    case {_enum_id(e.ctype)}:\n        switch (v) {{"))
        out += [(("e", e.ctype, 1, name), f"        N({e.prefix}{name})") for name, _, _ in e.members]
        out.append((("e", e.ctype, 2), "        default: return NULL;\n        }"))
    for what in _INFO_KINDS:
        enum = next((e for e in abi.enums if e.ctype == f"ol_{what.lower()}_info_t"), None)
        if enum is None:  # no such query at this level (contexts before main)
            continue
        out.append((("i", what, 0), f"static int info_type_{what}(uint32_t prop) {{\n    switch (prop) {{"))
        for name, ctype in abi.info_types[what].items():
            code = _SIMPLE_TYPES.get(ctype) or ("CAPI_T_HANDLE" if ctype.endswith("_handle_t") else _enum_id(ctype))
            out.append((("i", what, 1, name), f"    case {enum.prefix}{name}: return {code};"))
        out.append((("i", what, 2), "    default: return CAPI_T_UNKNOWN;\n    }\n}\n"))
    out += [(("fn", fn.name), "\n".join(_function(fn, enums))) for fn in abi.functions]
    return out


def _merged_order(levels: Sequence[list[Piece]]) -> list[Hashable]:
    """Every key of every level, each level's keys in its order (a key only some levels have
    follows the key it follows there)."""
    order: list[Hashable] = []
    for pieces in levels:
        after = -1
        for key, _ in pieces:
            if key in order:
                after = order.index(key)
            else:
                after += 1
                order.insert(after, key)
    return order


def _guard(levels: Sequence[str]) -> str:
    return " || ".join(f"CAPI_ABI == CAPI_ABI_{level.upper()}" for level in levels)


def _line_merged(a: tuple[str, list[str]], b: tuple[str, list[str]]) -> list[str]:
    """Two levels' texts of one piece (every level has one of them) as one, the lines that differ
    under ``#if``/``#elif`` (a signature with one more parameter: that parameter's lines alone)."""
    left, right = a[0].split("\n"), b[0].split("\n")
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if tag == "equal":
            out += left[i1:i2]
            continue
        directive = "#if"
        for (levels, chunk) in ((a[1], left[i1:i2]), (b[1], right[j1:j2])):
            if chunk:
                out += [f"{directive} {_guard(levels)}", *chunk]
                directive = "#elif"
        out.append("#endif")
    return out


def merge(abis: Sequence[Abi], select: str) -> list[str]:
    """The lines of the pieces whose key is ``select`` or starts with it, of every level: a piece
    that differs between levels under ``#if``/``#elif``, one that only some levels have under
    ``#if`` (consecutive pieces of the same levels under one)."""
    texts = [dict(_pieces(abi)) for abi in abis]
    keys = [key for key in _merged_order([_pieces(abi) for abi in abis])
            if key == select or (isinstance(key, tuple) and key[0] == select)]
    every = tuple(abi.name for abi in abis)
    lines: list[str] = []
    guard: tuple[str, ...] = every  # the levels of the open #if (every: none open)
    for key in keys:
        variants: dict[str, list[str]] = {}  # text -> the levels having it
        for abi, pieces in zip(abis, texts):
            if key in pieces:
                variants.setdefault(pieces[key], []).append(abi.name)
        wanted = tuple(next(iter(variants.values()))) if len(variants) == 1 else ()
        if guard != every and wanted != guard:
            lines.append("#endif")
            guard = every
        if len(variants) == 2 and sum(map(len, variants.values())) == len(every):
            lines += _line_merged(*variants.items())
            continue
        if len(variants) > 1:
            for i, (text, names) in enumerate(variants.items()):
                lines += [f"{'#if' if i == 0 else '#elif'} {_guard(names)}", text]
            lines.append("#endif")
            continue
        if wanted != guard:
            lines.append(f"#if {_guard(wanted)}")
            guard = wanted
        lines.append(next(iter(variants)))
    if guard != every:
        lines.append("#endif")
    return lines


def source(abis: Sequence[Abi]) -> str:
    """The C source of every entry point of every level of ``abis`` (compiled once per level)."""
    ids = "\n".join(f"#define CAPI_ABI_{abi.name.upper()} {i}" for i, abi in enumerate(abis))
    levels = ", ".join(abi.name for abi in abis)
    out = [f"/* Generated by python -m offload_capi.generate from offload's API table (ABI levels {levels}): "
           "do not edit. */", '#include "capi.h"', '#include "capi_trace.h"', "", ids,
           "#ifndef CAPI_ABI", "#error \"compile with -DCAPI_ABI=CAPI_ABI_<LEVEL> and that level's OffloadAPI.h\"",
           "#endif", ""]
    out += merge(abis, "abi") + merge(abis, "c")
    out += ["", "enum capi_enum_id {", *merge(abis, "E"), "};", ""]
    out += ["enum capi_function_id {", *merge(abis, "F"), "};", ""]
    out += ["/* the bridge's callables, in capi_function_id order (_bridge.tables) */",
            "const char *const capi_functions[] = {", *merge(abis, "f"), "    NULL,", "};", ""]
    out += ["/* the device properties of this level, by their numbers here (_bridge.tables) */",
            "#define D(name) {OL_DEVICE_INFO_##name, #name},",
            "const capi_named capi_device_infos[] = {", *merge(abis, "d"), "    {0, NULL},", "};", "#undef D", ""]
    out += ["#define N(enumerator) case enumerator: return #enumerator;",
            "const char *capi_enum_name(int which, uint32_t v) {", "    switch (which) {"]
    out += merge(abis, "e") + ["    default: return NULL;", "    }", "}", "#undef N", "",
                               "const int capi_errc_enum = CAPI_E_OL_ERRC_T;", ""]
    out += ["/* offload's error codes (OffloadError.code) by their numbers at this level */",
            "const uint32_t capi_errc_of[] = {", *merge(abis, "x"), "};",
            "const size_t capi_errc_count = sizeof capi_errc_of / sizeof *capi_errc_of;", ""]
    out += merge(abis, "i")
    out += merge(abis, "fn")
    return "\n".join(out) + "\n"
