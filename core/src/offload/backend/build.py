"""What a backend's ``build_source`` hook does alike: find a compiler, run it on a source in a
private temporary folder, and turn its failure into the right ``OffloadError``.

- ``kernel_include_dir()``: the folder of ``offload_kernel.h`` (the portable kernel header), which
  every builder puts on the include path;
- ``find_tool(names, env=...)``: the first program found (``$env`` first), else
  ``HOST_TOOL_NOT_FOUND`` naming what was looked for;
- ``compile_source(source, suffix, argv, what)``: writes ``source`` to ``input<suffix>``, runs the
  command ``argv(input, output)`` returns and gives back the output's bytes; a failure is
  ``COMPILE_FAILURE`` whose details hold the command and the compiler's log (its last
  ``LOG_TAIL`` characters).
"""

from __future__ import annotations

import os
import pathlib
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence

from .._values.enums import ErrorCode
from .._values.errors import OffloadError

__all__ = ["LOG_TAIL", "compile_source", "compile_failure", "find_tool", "kernel_include_dir"]

LOG_TAIL = 8000  # characters of a compiler's log kept in a COMPILE_FAILURE
_INCLUDE = pathlib.Path(__file__).resolve().parent.parent / "include"


def kernel_include_dir() -> pathlib.Path:
    """The folder holding ``offload_kernel.h``."""
    return _INCLUDE


def find_tool(names: Sequence[str], *, env: str | None = None, what: str = "compiler") -> list[str]:
    """The command of ``$env`` (split like a shell) when set, else the first of ``names`` on PATH
    (or an absolute path that exists), as an argv prefix; ``HOST_TOOL_NOT_FOUND`` otherwise."""
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
