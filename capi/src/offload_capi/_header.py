"""``OffloadAPI.h`` for one ABI level, in liboffload's style (its ``APIGen`` output), from ``_abi``.

The header is ABI-compatible with the library of the same level: the same enumerators and
numbers, the same struct layouts, the same prototypes (``tests/capi/test_header.py`` compares
them with Debian's ``OffloadAPI.h`` for LLVM 22).
"""

from __future__ import annotations

import enum

from ._abi import Abi, CFunction

_RULE = "/" * 79
_BANNER = """//===- Auto-generated file, part of the offload project (offload-capi) ----===//
//
// Part of the LLVM Project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

// Auto-generated file, do not manually edit: python -m offload_capi.generate
// ({abi} ABI, from offload's API table).

#pragma once

#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <stdbool.h>
#endif

#if defined(__cplusplus)
extern "C" {{
#endif
"""

_MACROS = (
    ("OL_APICALL", "Calling convention for all API functions", "#if defined(_WIN32)\n#define OL_APICALL __cdecl\n#else\n#define OL_APICALL\n#endif // defined(_WIN32)"),
    ("OL_APIEXPORT", "Microsoft-specific dllexport storage-class attribute", "#if defined(_WIN32)\n#define OL_APIEXPORT __declspec(dllexport)\n#else\n#define OL_APIEXPORT\n#endif // defined(_WIN32)"),
    ("OL_SUCCESS", "Success condition", "#define OL_SUCCESS NULL"),
)
_HANDLES = (
    ("context", "Handle of context object"), ("device", "Handle of platform's device object"),
    ("event", "Handle of event object"), ("platform", "Handle of a platform instance"),
    ("program", "Handle of program object"), ("queue", "Handle of queue object"),
    ("symbol", "Handle of an object in a device's memory for a specific program"),
)
_TAIL_TYPES = """{rule}
/// @brief Device floating-point capability flags
typedef uint32_t ol_device_fp_capability_flags_t;

{rule}
/// @brief Memory registering/locking flags
typedef uint32_t ol_memory_register_flags_t;

{rule}
/// @brief Result type returned by all entry points.
typedef const struct ol_error_struct_t *ol_result_t;

{rule}
/// @brief User-provided function to be used with `olIterateDevices`
typedef bool (*ol_device_iterate_cb_t)(ol_device_handle_t Device, void *UserData);

{rule}
/// @brief Host function for use by `olLaunchHostFunction`.
typedef void (*ol_host_function_cb_t)(void *UserData);

{rule}
/// @brief Code location information that can optionally be associated with an
/// API call
typedef struct ol_code_location_t {{
  const char *FunctionName; /// Function name
  const char *SourceFile;   /// Source code file
  uint32_t LineNumber;      /// Source code line number
  uint32_t ColumnNumber;    /// Source code column number
}} ol_code_location_t;

{rule}
/// @brief A three element vector
typedef struct ol_dimensions_t {{
  uint32_t x; /// X
  uint32_t y; /// Y
  uint32_t z; /// Z
}} ol_dimensions_t;

{rule}
/// @brief Details of the error condition returned by an API call
typedef struct ol_error_struct_t {{
  ol_errc_t Code;      /// The error code
  const char *Details; /// String containing error details
}} ol_error_struct_t;

{rule}
/// @brief Size-related arguments for a kernel launch.
typedef struct ol_kernel_launch_size_args_t {{
  size_t Dimensions;                /// Number of work dimensions
  struct ol_dimensions_t NumGroups; /// Number of work groups in each dimension
  struct ol_dimensions_t GroupSize; /// Size of a work group in each dimension
  size_t DynSharedMemory;           /// Size of dynamic shared memory in bytes.
}} ol_kernel_launch_size_args_t;
"""


# The types only some levels have (main's), each emitted where a prototype or enum of the level uses it.
_LEVEL_TYPES = (
    ("ol_mem_migration_flags_t", "/// @brief Memory migration flags (a bit field of ol_mem_migration_flag_t)\n"
     "typedef uint32_t ol_mem_migration_flags_t;"),
    ("ol_platform_iterate_cb_t", "/// @brief User-provided function to be used with `olIteratePlatforms`\n"
     "typedef bool (*ol_platform_iterate_cb_t)(ol_platform_handle_t Platform, void *UserData);"),
    ("ol_symbol_iterate_cb_t", "/// @brief User-provided function to be used with `olIterateSymbols`\n"
     "typedef bool (*ol_symbol_iterate_cb_t)(ol_symbol_handle_t Symbol, void *UserData);"),
    ("ol_init_args_t", "/// @brief Arguments of `olInit`: the platform backends to bring up (the host platform always)\n"
     "typedef struct ol_init_args_t {\n"
     "  size_t NumPlatforms;                   /// Number of entries in Platforms\n"
     "  const ol_platform_backend_t *Platforms; /// The backends to bring up; NULL: every one\n"
     "} ol_init_args_t;"),
    ("ol_kernel_launch_prop_t", "/// @brief A kernel launch property; a list of them ends with OL_KERNEL_LAUNCH_PROP_TYPE_NONE\n"
     "typedef struct ol_kernel_launch_prop_t {\n"
     "  ol_kernel_launch_prop_type_t type; /// What the property is\n"
     "  void *data;                        /// Its value (IS_COOPERATIVE: a pointer to a bool)\n"
     "} ol_kernel_launch_prop_t;"),
)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _decl(ctype: str, name: str) -> str:
    return f"{ctype}{name}" if ctype.endswith("*") else f"{ctype} {name}"


def _function(fn: CFunction) -> list[str]:
    lines = [_RULE, f"/// @brief Function parameters for {fn.name}",
             "/// @details Each entry is a pointer to the parameter passed to the function;"]
    if fn.params:
        lines.append(f"typedef struct {_snake(fn.name[2:])}_params_t {{")
        lines += [f"  {_decl(p.ctype + ' *' if not p.ctype.endswith('*') else p.ctype + '*', 'p' + p.name)};" for p in fn.params]
        lines.append(f"}} ol_{_snake(fn.name[2:])}_params_t;")
        lines.append("")
    else:
        lines = []
    returns = ["///     - ::OL_RESULT_SUCCESS", "///     - ::OL_ERRC_UNINITIALIZED"]
    returns += [f"///     - ::OL_ERRC_{code.name}\n///         + `{cond}`" for code, cond in fn.checks]
    params = ",\n".join(f"    {_decl(p.ctype, p.name)}" for p in fn.params)
    lines += [_RULE, f"/// @brief {fn.doc}", "///", "/// @returns", *returns]
    lines.append(f"OL_APIEXPORT ol_result_t OL_APICALL {fn.name}(" + (f"\n{params});" if params else ");"))
    lines.append("")
    lines += [_RULE, f"/// @brief Variant of {fn.name} that also sets source code location information",
              "/// @details See also ::" + fn.name]
    loc = "    ol_code_location_t *CodeLocation"
    lines.append(f"OL_APIEXPORT ol_result_t OL_APICALL {fn.name}WithCodeLoc(\n" + (f"{params},\n" if params else "") + f"{loc});")
    lines.append("")
    return lines


def header(abi: Abi) -> str:
    """The text of ``offload/OffloadAPI.h`` for ``abi``."""
    out = [_BANNER.format(abi=abi.name)]
    for name, brief, body in _MACROS:
        out += [_RULE, f"#ifndef {name}", f"/// @brief {brief}", body, f"#endif // {name}", ""]
    for part, value in zip(("MAJOR", "MINOR", "PATCH"), abi.version):
        out += [_RULE, f"#ifndef OL_VERSION_{part}", f"/// @brief {part.capitalize()} version of the Offload API",
                f"#define OL_VERSION_{part} {value}", f"#endif // OL_VERSION_{part}", ""]
    for handle, brief in _HANDLES:
        out += [_RULE, f"/// @brief {brief}", f"typedef struct ol_{handle}_impl_t *ol_{handle}_handle_t;", ""]
    info_of_enum = {f"ol_{_snake(what)}_info_t": types for what, types in abi.info_types.items()}
    for e in abi.enums:
        out += [_RULE, f"/// @brief {e.py.__doc__.strip().splitlines()[0] if e.py.__doc__ else e.ctype}", f"typedef enum {e.ctype} {{"]
        for name, number, _ in e.members:
            if e.ctype in info_of_enum:
                out.append(f"  /// [{info_of_enum[e.ctype][name]}]")
            out.append(f"  {e.prefix}{name} = {number},")
        last = (max(n for _, n, _ in e.members) << 1) if issubclass(e.py, enum.IntFlag) else len(e.members)
        out += ["  /// @cond", f"  {e.prefix}LAST = {last},", f"  {e.prefix}FORCE_UINT32 = 0x7fffffff", "  /// @endcond",
                "", f"}} {e.ctype};", ""]
    out.append(_TAIL_TYPES.format(rule=_RULE))
    used = {p.ctype.replace("const ", "").rstrip(" *") for fn in abi.functions for p in fn.params}
    used |= {e.ctype.replace("_flag_t", "_flags_t") for e in abi.enums}
    for name, text in _LEVEL_TYPES:
        if name in used:
            out += [_RULE, text, ""]
    for fn in abi.functions:
        out += _function(fn)
    out += ["#if defined(__cplusplus)", "} // extern \"C\"", "#endif", ""]
    return "\n".join(out)
