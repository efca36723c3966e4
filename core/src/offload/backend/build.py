"""What a backend's ``build_source`` hook does alike: find a compiler, run it on a source in a
private temporary folder, and turn its failure into the right ``OffloadError``.

- ``kernel_include_dir()``: the folder of ``offload_kernel.h`` (the portable kernel header), which
  every builder puts on the include path;
- ``find_tool(names, env=...)``: the first program found (``$env`` first), else
  ``HOST_TOOL_NOT_FOUND`` naming what was looked for;
- ``compile_source(source, suffix, argv, what)``: writes ``source`` to ``input<suffix>``, runs the
  command ``argv(input, output)`` returns and gives back the output's bytes; a failure is
  ``COMPILE_FAILURE`` whose details hold the command and the compiler's log (its last
  ``LOG_TAIL`` characters);
- ``tool_version(argv)``: the command and its ``--version`` output on one line (asked once per
  process), for ``build_target`` to name the compiler's version;
- ``DiskCache``, ``cache_key``, ``OffloadCacheWarning``: a private on-disk cache of built code
  (``offload.build`` keeps every backend's images in one; the host backend's ``build_program``
  keeps its own).
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Callable, Sequence

from .._values.diskcache import DiskCache, OffloadCacheWarning, cache_key
from .._values.enums import ErrorCode
from .._values.errors import OffloadError

__all__ = [
    "LOG_TAIL", "DiskCache", "OffloadCacheWarning", "cache_key", "compile_source", "compile_failure", "find_tool",
    "kernel_include_dir", "tool_version",
]  # fmt: skip

LOG_TAIL = 8000  # characters of a compiler's log kept in a COMPILE_FAILURE
_INCLUDE = pathlib.Path(__file__).resolve().parent.parent / "include"
_versions: dict[str, str] = {}
_lock = threading.Lock()


def kernel_include_dir() -> pathlib.Path:
    """The folder holding ``offload_kernel.h``."""
    return _INCLUDE


def find_tool(names: Sequence[str], *, env: str | None = None, what: str = "compiler") -> list[str]:
    """The command of ``$env`` (split like a shell) when set, else the first of ``names`` on PATH
    (or an absolute path that exists), as an argv prefix; ``HOST_TOOL_NOT_FOUND`` otherwise."""
    import shlex  # here and below: imported at a build's first use, not by every olInit (start-up)
    import shutil

    if env and os.environ.get(env):
        argv = shlex.split(os.environ[env])
        found = shutil.which(argv[0]) if argv else None
        if found is None:
            raise OffloadError(ErrorCode.HOST_TOOL_NOT_FOUND, f"{what} ${env}={os.environ[env]!r} not found")
        return [found, *argv[1:]]
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return [found]
    hint = f" (set ${env} or install one)" if env else ""
    raise OffloadError(ErrorCode.HOST_TOOL_NOT_FOUND, f"no {what}: none of {', '.join(names)} found{hint}")


def compile_failure(what: str, log: str) -> OffloadError:
    """A ``COMPILE_FAILURE`` carrying the tail of ``log``."""
    tail = log.strip()[-LOG_TAIL:]
    return OffloadError(ErrorCode.COMPILE_FAILURE, f"{what} failed:\n{tail}" if tail else f"{what} failed (no output)")


def compile_source(
    source: str,
    suffix: str,
    argv: Callable[[pathlib.Path, pathlib.Path], Sequence[str | os.PathLike[str]]],
    what: str,
    timeout: float = 600,
) -> bytes:
    """Run the compiler command ``argv(input, output)`` on ``source`` and return the output file."""
    import shlex
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="offload-build-") as tmp:
        src = pathlib.Path(tmp) / f"input{suffix}"
        out = pathlib.Path(tmp) / "output"
        src.write_text(source, encoding="utf-8")
        command = [str(part) for part in argv(src, out)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp, timeout=timeout)
        except FileNotFoundError as exc:
            raise OffloadError(ErrorCode.HOST_TOOL_NOT_FOUND, f"{what}: {command[0]} cannot run: {exc}") from None
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OffloadError(ErrorCode.COMPILE_FAILURE, f"{what}: {shlex.join(command)}: {exc}") from None
        if result.returncode != 0 or not out.exists():
            log = (result.stderr or "") + (result.stdout or "")
            raise compile_failure(f"{what} ({shlex.join(command)}, exit {result.returncode})", log)
        return out.read_bytes()


def tool_version(argv: Sequence[str]) -> str:
    """``argv`` (a command, as ``find_tool`` gives it) and its ``--version`` output's lines, asked
    once per process and command; ``HOST_TOOL_NOT_FOUND`` when it cannot run."""
    import shlex
    import subprocess

    command = shlex.join(argv)
    with _lock:
        known = _versions.get(command)
    if known is not None:
        return known
    try:
        result = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OffloadError(ErrorCode.HOST_TOOL_NOT_FOUND, f"{command} cannot run: {exc}") from None
    lines = [line for line in (result.stdout or result.stderr or "").splitlines() if line.strip()]
    ident = f"{command} ({' / '.join(line.strip() for line in lines) or 'no version'})"  # nvcc says it last
    with _lock:
        _versions[command] = ident
    return ident
