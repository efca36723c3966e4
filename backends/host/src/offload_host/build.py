"""Compiles C source into host program bytes (ELF shared objects) with the system compiler.

Programs are built for the machine they run on: ``-O3``, the host CPU's instruction set
(``-march=native``, or ``-mcpu=native`` where the compiler has only that) and
``-ffp-contract=off`` (no fused multiply-adds, so results do not depend on the CPU);
``machine_flags()`` says which, and ``build_program(..., machine_flags=...)`` overrides them.

Results are cached in memory and on disk (``$OFFLOAD_HOST_CACHE``, else ``offload-host/`` in
the XDG cache folder: ``$XDG_CACHE_HOME`` when set to an absolute path, else ``~/.cache``), keyed by the compiler, its version, the flags, the host CPU (when a
flag names ``native``), the source and the launch ABI header, so a rebuilt compiler or header, or
a cache folder shared with another CPU, never serves a stale or foreign binary.

The disk cache holds code that is later loaded into the process, and its keys are computable
from public source, so it is trusted only when nobody else could have written it (the rule of
pip's and ccache's caches): the folder is created private (0700); a folder or a cached file not
owned by this user, or writable by group or others, or a cached file that is not a regular file,
is not used: one ``OffloadHostCacheWarning`` names it and the program is built without the disk
cache (``offload.backend.build.DiskCache``, the core's disk cache of ``offload.build`` too;
``OFFLOAD_HOST_CACHE=off`` turns it off).
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = [
    "TEST_KERNELS",
    "build_identity",
    "build_program",
    "build_test_kernel",
    "include_dir",
    "machine_flags",
    "test_kernel_source",
]

_PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
_KERNELS_DIR = _PACKAGE_DIR / "kernels"
_BASE_FLAGS = ("-shared", "-fPIC", "-std=gnu11")
_OPT_FLAGS = ("-O3",)
_EXACT_FP_FLAGS = ("-ffp-contract=off",)
_NATIVE_CANDIDATES = (("-march=native",), ("-mcpu=native",))
_STDERR_TAIL = 4000  # characters of compiler output kept in a COMPILE_FAILURE message

#: Names of the shipped liboffload test programs (``kernels/<name>.c``).
TEST_KERNELS: tuple[str, ...] = (
    "bar",
    "byte",
    "foo",
    "global",
    "global_ctor",
    "global_dtor",
    "localmem",
    "localmem_reduction",
    "localmem_static",
    "multiargs",
    "noargs",
    "saxpy",
    "sequence",
    "single_counter",
)

class OffloadHostCacheWarning(UserWarning):
    """The disk cache of host programs is not private to this user, so it is not used."""


_memory_cache: dict[str, bytes] = {}
_native_flags: dict[str, tuple[str, ...]] = {}
_cpu_ids: list[str] = []
_disk_cache: list[Any] = []
_lock = threading.Lock()


def include_dir() -> pathlib.Path:
    """The folder holding ``offload_host.h``."""
    return _PACKAGE_DIR / "include"


def _raise(code_name: str, message: str) -> NoReturn:
    # The core is imported lazily: this module must import without it.
    from offload import ErrorCode, OffloadError

    raise OffloadError(getattr(ErrorCode, code_name), message)


def _compiler() -> list[str]:
    """The command of ``$CC`` (else ``cc``), its program resolved to an absolute path;
    HOST_TOOL_NOT_FOUND if that program is missing."""
    import shlex  # here and below: at a build's first use, not by every olInit (start-up)
    import shutil

    spec = os.environ.get("CC") or "cc"
    argv = shlex.split(spec)
    path = shutil.which(argv[0]) if argv else None
    if path is None:
        _raise("HOST_TOOL_NOT_FOUND", f"C compiler {spec!r} not found (set $CC or install cc)")
    return [path, *argv[1:]]


def _compiler_id(compiler: list[str]) -> str:
    """The compiler command and its ``--version`` output (``offload.backend.build.tool_version``:
    asked once per command; ``HOST_TOOL_NOT_FOUND`` when it cannot run)."""
    from offload.backend.build import tool_version

    return tool_version(compiler)


def _native_flags_of(compiler: list[str]) -> tuple[str, ...]:
    """The first of ``-march=native`` / ``-mcpu=native`` the compiler accepts, or none (cached
    per command)."""
    import shlex
    import subprocess

    command = shlex.join(compiler)
    with _lock:
        cached = _native_flags.get(command)
    if cached is not None:
        return cached
    found: tuple[str, ...] = ()
    for candidate in _NATIVE_CANDIDATES:
        try:
            probe = subprocess.run(
                [*compiler, *candidate, "-fsyntax-only", "-x", "c", os.devnull],
                capture_output=True, timeout=60, check=False,
            )
        except (OSError, subprocess.SubprocessError):
            break
        if probe.returncode == 0:
            found = candidate
            break
    with _lock:
        _native_flags[command] = found
    return found


def machine_flags() -> tuple[str, ...]:
    """The optimisation flags ``build_program`` uses by default with ``$CC``: ``-O3``, the host
    CPU's instruction set where the compiler supports it (``-march=native`` or ``-mcpu=native``),
    and ``-ffp-contract=off``."""
    return (*_OPT_FLAGS, *_native_flags_of(_compiler()), *_EXACT_FP_FLAGS)


def _cpu_id() -> str:
    """This machine's CPU model and feature flags (``/proc/cpuinfo``'s first processor), else
    what ``platform`` says: a program built with ``native`` flags runs only on such a CPU."""
    with _lock:
        if _cpu_ids:
            return _cpu_ids[0]
    import platform  # here: at a native build's first use, not by every olInit (start-up)

    ident = f"{platform.machine()}\n{platform.processor()}"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            first = f.read().split("\n\n", 1)[0]
        ident += "\n" + "\n".join(
            line for line in first.splitlines()
            if line.split(":", 1)[0].strip() in ("model name", "flags", "Features", "CPU part", "isa")
        )
    except OSError:
        pass
    with _lock:
        _cpu_ids[:] = [ident]
    return ident


def _disk() -> Any:
    """The disk cache (``offload.backend.build.DiskCache``, made on first use: the core is
    imported lazily, so this module imports without it)."""
    from offload.backend.build import DiskCache

    with _lock:
        if not _disk_cache:
            _disk_cache.append(DiskCache("offload-host", "OFFLOAD_HOST_CACHE", ".so", "offload-host", OffloadHostCacheWarning))
        return _disk_cache[0]


def _cache_key(compiler_id: str, flags: Sequence[str], source: str) -> str:
    from offload.backend.build import cache_key

    header = (include_dir() / "offload_host.h").read_bytes()
    cpu = _cpu_id() if any("native" in flag for flag in flags) else ""
    return cache_key(compiler_id, "\0".join(flags), cpu, source, header)


def build_identity(cflags: Sequence[str] = ()) -> str:
    """What a default ``build_program`` depends on besides the source and ``cflags``: the compiler
    and its version, the default machine flags and, where they name ``native``, the CPU (the
    backend's ``build_target``, by which ``offload.build`` keys its cache), and the launch ABI
    header's digest."""
    import hashlib  # at a build's first use, not by every olInit (start-up)

    compiler = _compiler()
    flags = _program_flags(compiler, None, cflags)
    cpu = _cpu_id() if any("native" in flag for flag in flags) else ""
    header = hashlib.sha256((include_dir() / "offload_host.h").read_bytes()).hexdigest()[:16]
    return "\n".join((os.uname().machine, _compiler_id(compiler), " ".join(flags), cpu, f"offload_host.h {header}"))


def _compile(compiler: list[str], flags: Sequence[str], source: str, name: str) -> bytes:
    import shlex
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="offload-host-") as tmp:
        src = pathlib.Path(tmp) / f"{name}.c"
        out = pathlib.Path(tmp) / f"lib{name}.so"
        src.write_text(source, encoding="utf-8")
        argv = [*compiler, *flags, "-o", str(out), str(src)]
        command = shlex.join(compiler)
        try:
            result = subprocess.run(argv, capture_output=True, text=True, check=False)
        except OSError as exc:
            _raise("HOST_TOOL_NOT_FOUND", f"C compiler {command!r} cannot run: {exc}")
        if result.returncode != 0 or not out.exists():
            tail = (result.stderr or result.stdout).strip()[-_STDERR_TAIL:]
            _raise("COMPILE_FAILURE", f"{command} failed: {tail}")
        return out.read_bytes()


def _program_flags(compiler: list[str], machine: Sequence[str] | None, cflags: Sequence[str]) -> list[str]:
    """Every flag of a build but the output and the source (``machine`` None: the defaults)."""
    if machine is None:
        machine = (*_OPT_FLAGS, *_native_flags_of(compiler), *_EXACT_FP_FLAGS)
    return [*_BASE_FLAGS, *machine, f"-I{include_dir()}", *cflags]


def build_program(
    source: str,
    *,
    name: str = "program",
    cflags: Sequence[str] = (),
    cache: bool = True,
    machine_flags: Sequence[str] | None = None,
) -> bytes:
    """Compile C ``source`` (written against ``offload_host.h``) into shared-object bytes for
    the machine it runs on.

    Runs ``$CC`` (else ``cc``) as ``cc -shared -fPIC -std=gnu11 <machine_flags> -I<include_dir>
    <cflags> -o lib<name>.so <name>.c`` in a private temporary directory. ``machine_flags``
    defaults to ``machine_flags()``: ``-O3``, ``-march=native`` (``-mcpu=native`` where the
    compiler has only that; nothing where it has neither) and ``-ffp-contract=off``; pass your
    own (e.g. ``("-O2",)`` for a portable program) to replace them. ``cflags`` come last, so
    they win over both. With ``cache``, results are reused from memory and disk (the key holds
    every flag, and the CPU when a flag names ``native``).

    Raises ``OffloadError`` with ``HOST_TOOL_NOT_FOUND`` when the compiler is missing and
    ``COMPILE_FAILURE`` (carrying the compiler's diagnostics) when compilation fails.
    """
    if isinstance(cflags, str):
        raise TypeError("cflags must be a sequence of strings, not a string")
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"invalid program name {name!r}")
    if isinstance(machine_flags, str):
        raise TypeError("machine_flags must be a sequence of strings, not a string")
    compiler = _compiler()
    flags = _program_flags(compiler, machine_flags, cflags)
    if not cache:
        return _compile(compiler, flags, source, name)

    key = _cache_key(_compiler_id(compiler), flags, source)
    with _lock:
        data = _memory_cache.get(key)
    if data is None:
        disk = _disk()
        data = disk.get(key)
        if data is None:
            data = _compile(compiler, flags, source, name)
            disk.put(key, data)
        with _lock:
            _memory_cache[key] = data
    return data


def test_kernel_source(name: str) -> str:
    """The C source of the shipped test program ``name`` (one of ``TEST_KERNELS``)."""
    if name not in TEST_KERNELS:
        _raise("NOT_FOUND", f"unknown test kernel {name!r}; known: {', '.join(TEST_KERNELS)}")
    return (_KERNELS_DIR / f"{name}.c").read_text(encoding="utf-8")


def build_test_kernel(name: str) -> bytes:
    """The built program bytes of the shipped test program ``name``."""
    return build_program(test_kernel_source(name), name=name)


# Not a pytest test, despite the name.
test_kernel_source.__test__ = False  # type: ignore[attr-defined]
