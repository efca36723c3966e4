"""Compiles C source into host program bytes (ELF shared objects) with the system compiler.

Results are cached in memory and on disk (``$OFFLOAD_HOST_CACHE``, else
``~/.cache/offload-host/``), keyed by the compiler, its version, the flags, the source and
the launch ABI header, so a rebuilt compiler or header never serves a stale binary.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from typing import NoReturn

__all__ = [
    "TEST_KERNELS",
    "build_program",
    "build_test_kernel",
    "include_dir",
    "test_kernel_source",
]

_PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
_KERNELS_DIR = _PACKAGE_DIR / "kernels"
_BASE_FLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11")
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

_memory_cache: dict[str, bytes] = {}
_compiler_ids: dict[str, str] = {}
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
    spec = os.environ.get("CC") or "cc"
    argv = shlex.split(spec)
    path = shutil.which(argv[0]) if argv else None
    if path is None:
        _raise("HOST_TOOL_NOT_FOUND", f"C compiler {spec!r} not found (set $CC or install cc)")
    return [path, *argv[1:]]


def _compiler_id(compiler: list[str]) -> str:
    """The compiler command and its first ``--version`` line (cached per command)."""
    command = shlex.join(compiler)
    with _lock:
        cached = _compiler_ids.get(command)
    if cached is not None:
        return cached
    try:
        result = subprocess.run(
            [*compiler, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
        lines = (result.stdout or result.stderr).splitlines()
        version = lines[0] if lines else ""
    except (OSError, subprocess.SubprocessError) as exc:
        _raise("HOST_TOOL_NOT_FOUND", f"C compiler {command!r} cannot run: {exc}")
    ident = f"{command}\n{version}"
    with _lock:
        _compiler_ids[command] = ident
    return ident


def _cache_dir() -> pathlib.Path:
    env = os.environ.get("OFFLOAD_HOST_CACHE")
    if env:
        return pathlib.Path(env)
    return pathlib.Path.home() / ".cache" / "offload-host"


def _cache_key(compiler_id: str, flags: Sequence[str], source: str) -> str:
    header = (include_dir() / "offload_host.h").read_bytes()
    h = hashlib.sha256()
    for part in (compiler_id.encode(), "\0".join(flags).encode(), source.encode(), header):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _read_disk_cache(key: str) -> bytes | None:
    try:
        return (_cache_dir() / f"{key}.so").read_bytes()
    except OSError:
        return None


def _write_disk_cache(key: str, data: bytes) -> None:
    """Best effort: an unwritable cache only costs a rebuild next time."""
    directory = _cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, directory / f"{key}.so")
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def _compile(compiler: list[str], flags: Sequence[str], source: str, name: str) -> bytes:
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


def build_program(
    source: str, *, name: str = "program", cflags: Sequence[str] = (), cache: bool = True
) -> bytes:
    """Compile C ``source`` (written against ``offload_host.h``) into shared-object bytes.

    Runs ``$CC`` (else ``cc``) as ``cc -O2 -shared -fPIC -std=gnu11 -I<include_dir>
    <cflags> -o lib<name>.so <name>.c`` in a private temporary directory. With ``cache``,
    results are reused from memory and disk.

    Raises ``OffloadError`` with ``HOST_TOOL_NOT_FOUND`` when the compiler is missing and
    ``COMPILE_FAILURE`` (carrying the compiler's diagnostics) when compilation fails.
    """
    if isinstance(cflags, str):
        raise TypeError("cflags must be a sequence of strings, not a string")
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"invalid program name {name!r}")
    compiler = _compiler()
    flags = [*_BASE_FLAGS, f"-I{include_dir()}", *cflags]
    if not cache:
        return _compile(compiler, flags, source, name)

    key = _cache_key(_compiler_id(compiler), flags, source)
    with _lock:
        data = _memory_cache.get(key)
    if data is None:
        data = _read_disk_cache(key)
        if data is None:
            data = _compile(compiler, flags, source, name)
            _write_disk_cache(key, data)
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
