"""The source of every generated ol* function, from ``_api.table`` (liboffload's EntryPointGen).

``sources`` writes each table function as Python source: the public ``<name>``, whose body
(conversions, validation, handle liveness, the implementation call) runs behind one read of the
session state; with tracing on (or no session) it hands the call to ``_api.binding.slow``, which
runs the same body compiled from ``body_source``, lined up with the public function's body in the
file, so that a traced call's traceback shows the same lines. ``module_sources`` puts them in the
package ``_api/generated/``, a module per group of the ``_api`` sections that implement them
(``MODULES``: devices, memory, queues; one over ``MODULE_LINES`` continues in ``<name>_2``), checked in, so
that Python's bytecode cache keeps them and tracebacks show their lines. This module needs nothing
but the table::

    python -m offload._api.codegen            # rewrite core/src/offload/_api/generated/
    python -m offload._api.codegen --check    # exit 1 if a file differs from what the table gives

``tests/test_generated.py`` fails when the files drift from the table.
"""
from __future__ import annotations

import pathlib
import re
import sys
import textwrap

from .._values.signatures import _NO_DEFAULT, Function, Param
from .table import FUNCTIONS
from .._values.enums import ErrorCode

__all__ = [
    "GENERATED_PATH", "MODULES", "MODULE_LINES", "body_source", "module_functions", "module_of", "module_sources",
    "section_of", "sources", "write_or_check", "write_or_check_files",
]  # fmt: skip

GENERATED_PATH = pathlib.Path(__file__).with_name("generated")
MODULE_LINES = 400  # the most lines of one generated module

#: The ``_api`` section module that implements each function, by name (first match;
#: tests/test_generated.py checks it against ``_api.implementations``).
SECTIONS = (
    ("contexts", r"ol\w*Context\w*"),
    ("memory_async", r"olMem(Alloc|Free)Async"),
    ("memory_main", r"olMem(Prefetch|cpyRect|IsAccessible)"),
    ("memory", r"olMem\w*|olGetMemInfo\w*"),
    ("events", r"ol\w*Event(Info\w*|ElapsedTime)?"),
    ("queues", r"ol\w*Queue\w*|olWaitEvents|olLaunchHostFunction"),
    ("kernels", r"olLaunchKernel|olCalculateOptimalOccupancy|olGetKernel\w*"),
    ("programs", r"ol\w*(Program|Symbol|Binary)\w*"),
    ("devices", r"ol\w*(Platform|Device)\w*"),
)

#: The generated modules, each with the ``_api`` sections whose functions it holds: devices and
#: their programs, memory, and the work on queues (events, launches); a module over
#: ``MODULE_LINES`` continues in ``<name>_2``.
MODULES = {
    "devices": ("devices", "contexts", "programs"),
    "memory": ("memory", "memory_async", "memory_main"),
    "queues": ("queues", "events", "kernels"),
}


def _is_null_condition(param: Param) -> str:
    if param.kind == "pointer":
        return f"{param.py} is None or {param.py} == 0"
    return f"{param.py} is None"


def _body_lines(fn: Function) -> list[str]:
    """Validation, liveness checks and the implementation call (indented for a function body)."""
    lines = []
    for p in fn.params:  # numbers of other types become ints first, so checks see ints only
        if p.kind == "pointer":
            lines.append(f"    if {p.py}.__class__ is not int and {p.py} is not None:")
            # the original (a Buffer, say) stays referenced until the call returns: a temporary
            # passed straight in must not be collected, and its memory freed, under the call
            lines.append(f"        _held_{p.py} = {p.py}")
            lines.append(f"        {p.py} = _as_address({p.py}, {p.c!r})")
        elif p.kind == "size":
            lines.append(f"    if {p.py}.__class__ is not int: {p.py} = _as_size({p.py}, {p.c!r})")
    checks = [(c.code, c.c_text, c.py_expr) for c in fn.checks]
    checks += [
        (ErrorCode.INVALID_NULL_HANDLE, f"NULL == {p.c}", f"{p.py} is None")
        for p in fn.params
        if p.kind == "handle" and not p.optional
    ]
    checks += [
        (ErrorCode.INVALID_NULL_POINTER, f"NULL == {p.c}", _is_null_condition(p))
        for p in fn.params
        if p.kind in ("pointer", "data", "callback", "events", "handles", "struct", "string") and not p.optional
    ]
    if checks:
        lines.append("    if ctx.validate:")
        for code, c_text, py_expr in checks:  # one line each: a traceback shows the condition that failed
            lines.append(f"        if {py_expr}: raise _OffloadError({int(code)}, {'validation failure: ' + c_text!r})")
    for p in fn.params:
        if p.kind not in ("handle", "context"):
            continue
        cls = p.handle.__name__.removesuffix("Handle")  # type: ignore[union-attr]
        test = f"{p.py}.__class__ is not _{cls} or {p.py}._ctx is not ctx"
        if p.optional:
            test = f"{p.py} is not None and ({test})"
        lines.append(f"    if {test}: raise _stale({p.py}, _{cls}, {p.c!r})")
    call_args = ", ".join(["ctx"] + [p.py for p in fn.params])
    entry = repr(fn.name) if fn.registers is None else fn.registers
    lines += [
        "    calls = ctx.calls",
        f"    calls.append({entry})",
        "    try:",
        "        if _STATE.ctx is not ctx: raise _uninitialized()",
        f"        return _impl_{fn.name}({call_args})",
        "    except _OffloadError: raise",
        f"    except Exception as exc: raise _as_offload_error(exc, {fn.name!r}) from exc",
        f"    finally: calls.remove({entry})",
    ]
    return lines


def _signature(fn: Function) -> str:
    parts = []
    for p in fn.params:
        parts.append(p.py if p.default is _NO_DEFAULT else f"{p.py}=None")
    return ", ".join(parts)


def _prologue(fn: Function) -> list[str]:
    """The table's prologue, and for a function with a trailing ``context`` parameter the C order
    (the Context first) accepted too: one class test on the first argument."""
    lines = list(fn.prologue)
    names = [p.py for p in fn.params]
    if fn.params and fn.params[-1].kind == "context" and len(names) > 1:
        rotated = names[1:] + names[:1]
        lines.append(f"    if {names[0]}.__class__ is _Context: {', '.join(names)} = {', '.join(rotated)}")
    return lines


def _head(fn: Function, trace: bool) -> list[str]:
    """A public function's lines before its body: its ``def``, the prologue and the session."""
    lines = [f"def {fn.name}({_signature(fn)}):", *_prologue(fn)]
    if trace:  # tracing costs the untraced path nothing: STATE.untraced is None while it is on
        args = ", ".join(p.py for p in fn.params)
        return lines + ["    ctx = _STATE.untraced", f"    if ctx is None: return _slow({fn.name}, ({args},))"]
    return lines + ["    ctx = _STATE.ctx", "    if ctx is None: raise _uninitialized()"]


def _source(fn: Function, trace: bool) -> str:
    return "\n".join(_head(fn, trace) + _body_lines(fn)) + "\n"


def body_source(fn: Function, first_line: int) -> str:
    """``_body_<name>(ctx, *params)``: the body of the public function that starts at line
    ``first_line`` of its module, at the very lines it has there (blank lines before it), for
    ``compile`` with that module's file name: the call with tracing on runs it."""
    args = ", ".join(["ctx"] + [p.py for p in fn.params])
    at = first_line + len(_head(fn, True)) - 1  # the public function's ``_slow`` line
    return "\n" * (at - 1) + f"def _body_{fn.name}({args}):\n" + "\n".join(_body_lines(fn)) + "\n"


def sources(trace: bool = True) -> dict[str, tuple[str, str]]:
    """``{name: (source, filename)}`` of every table function; ``trace=False`` leaves the tracing
    test out (benchmarks)."""
    return {fn.name: (_source(fn, trace), f"<offload entry point {fn.name}>") for fn in FUNCTIONS}


def section_of(name: str) -> str:
    """The ``_api`` section that implements the table function ``name`` (``SECTIONS``)."""
    for section, pattern in SECTIONS:
        if re.fullmatch(pattern, name):
            return section
    raise KeyError(f"codegen.SECTIONS names no section for {name}")


def module_of(name: str) -> str:
    """The generated module (``MODULES``, before any cut) that holds the table function ``name``."""
    section = section_of(name)
    return next(module for module, sections in MODULES.items() if section in sections)


#: What a generated function may read besides its own ``_impl_<name>``: (module, name[:alias]),
#: imported as ``_<alias>`` (the name's own by default) by a module whose source reads it.
_NAMES = (
    ("_core.handles", "Context"), ("_core.handles", "Device"), ("_core.handles", "Event"),
    ("_core.handles", "Platform"), ("_core.handles", "Program"), ("_core.handles", "Queue"),
    ("_core.handles", "Symbol"), ("_core.ranges", "as_address"), ("_core.ranges", "as_size"),
    ("_core.session", "STATE"), ("_core.session", "uninitialized"), ("_values.errors", "OffloadError"),
    ("_values.errors", "as_offload_error"), ("_values.types", "KernelLaunchSizeArgs"), ("_values.types", "buffer_size:nbytes"),
    ("_api.binding", "count"), ("_api.binding", "slow"), ("_api.binding", "stale"),
    ("_api.binding", "zero_extent"),
)  # fmt: skip


def _imports(text: str) -> str:
    """The import lines of a generated module whose functions are ``text``: only what it reads."""
    by_module: dict[str, list[str]] = {}
    for module, name in _NAMES:
        name, _, alias = name.partition(":")
        alias = alias or name
        if re.search(rf"\b_{alias}\b", text):
            by_module.setdefault(module, []).append(f"{name} as _{alias}")
    lines = []
    for module, names in by_module.items():
        package = f"..{module.removeprefix('_api.')}" if module.startswith("_api.") else f"...{module}"
        lines.append(f"from {package} import {', '.join(names)}")
    return "\n".join(lines) + "\n"


def _header(what: str) -> str:
    return f'"""{what}\n(GENERATED by ``python -m offload._api.codegen`` from ``_api.table``; do not edit).\n"""\n# mypy: ignore-errors\n# fmt: off\n\n'


def _module(module: str, fns: list[Function]) -> str:
    """A generated module: its imports, each function's implementation (bound once, by name), then
    the functions."""
    text = "".join("\n\n" + _source(fn, True) for fn in fns)
    sections = ", ".join(f"``_api.{s}``" for s in MODULES[module.split("_")[0]])
    head = _header(textwrap.fill(f"The generated ol* functions that {sections} implement.", 100))
    bound = textwrap.fill(", ".join(f"_impl_{fn.name}" for fn in fns), 112, initial_indent="    ", subsequent_indent="    ")
    names = textwrap.fill(", ".join(repr(fn.name) for fn in fns), 112, initial_indent="    ", subsequent_indent="    ")
    implementations = f"\n(\n{bound},\n) = map(_implementation, (\n{names},\n))\n"
    return head + _imports(text) + "from ..implementations import implementation as _implementation\n" + implementations + text


def _cuts(module: str, fns: list[Function]) -> list[list[Function]]:
    """``fns`` (a module's functions, in order) cut into the fewest runs whose modules stay within
    ``MODULE_LINES``, of about equal size."""
    sizes = [len(_source(fn, True).splitlines()) + 3 for fn in fns]
    for parts in range(1, len(fns) + 1):
        cuts: list[list[Function]] = [[] for _ in range(parts)]
        before = 0
        for fn, size in zip(fns, sizes):
            cuts[min(parts - 1, before * parts // sum(sizes))].append(fn)
            before += size
        if all(cut and len(_module(module, cut).splitlines()) <= MODULE_LINES for cut in cuts):
            return cuts
    raise ValueError(f"a function of generated.{module} alone is over {MODULE_LINES} lines")


def module_functions() -> dict[str, list[Function]]:
    """The generated modules by name, each with its functions: the modules of ``MODULES`` (a
    module over ``MODULE_LINES`` cut into ``<name>``, ``<name>_2``, ...; each function in the
    table's order). ``_api.stubgen`` types the same modules."""
    modules: dict[str, list[Function]] = {module: [] for module in MODULES}
    for fn in FUNCTIONS:
        modules[module_of(fn.name)].append(fn)
    return {
        module if number == 1 else f"{module}_{number}": cut
        for module, fns in modules.items()
        for number, cut in enumerate(_cuts(module, fns), 1)
    }


def module_sources() -> dict[str, str]:
    """``{file name: text}`` of the package ``_api/generated/``: the modules of
    ``module_functions`` and the ``__init__.py`` that re-exports every function."""
    files: dict[str, str] = {}
    exports = []
    for name, cut in module_functions().items():
        files[f"{name}.py"] = _module(name, cut)
        listed = textwrap.fill(", ".join(fn.name for fn in cut), 116, initial_indent="    ", subsequent_indent="    ")
        exports.append(f"from .{name} import (\n{listed},\n)")
    what = (
        "The public ol* functions, one per ``_api.table`` entry, in a module per group of the ``_api``\n"
        "sections that implement them (``_api.codegen.MODULES``); ``_api.functions`` binds them as\n"
        "``offload.<name>``, ``_api.codegen`` says what each holds."
    )
    files["__init__.py"] = _header(what) + "\n".join(exports) + "\n"
    return files


def write_or_check(argv: list[str], default: pathlib.Path, text: str, command: str) -> int:
    """A generator's command line: write ``text`` to the path in ``argv`` (``default``), or with
    ``--check`` exit 1 where that file differs from it (``command`` rewrites it)."""
    return write_or_check_files(argv, default, {"": text}, command)


def write_or_check_files(
    argv: list[str], default: pathlib.Path, files: dict[str, str], command: str, pattern: str = "*.py"
) -> int:
    """``write_or_check`` of several files: ``files`` by name below the folder in ``argv``
    (``default``), or one file where the only name is ``""``. Writing removes the folder's other
    files that match ``pattern`` (a module the table no longer gives); ``--check`` counts them as drift."""
    check = "--check" in argv
    paths = [a for a in argv if not a.startswith("--")]
    root = pathlib.Path(paths[0]) if paths else default
    wanted = {(root / name if name else root): text for name, text in files.items()}
    stale = [] if "" in files or not root.is_dir() else [p for p in root.glob(pattern) if p not in wanted]
    if check:
        drift = stale + [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
        if drift:
            print(f"{', '.join(map(str, drift))} out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    for path in stale:
        path.unlink()
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return 0


def main(argv: list[str]) -> int:
    return write_or_check_files(argv, GENERATED_PATH, module_sources(), "python -m offload._api.codegen")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
