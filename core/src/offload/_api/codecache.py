"""Compiled entry points kept between processes, next to the package's own bytecode.

``_entrypoints`` writes every ol* function as Python source; compiling that source (about 100 KB)
took 10 ms of every ``import offload``. ``code_objects`` returns the compiled code of each source,
from a cache file in the package's ``__pycache__`` when that file holds exactly the same sources
(compared text for text, so an edited table or generator can never run stale code), else compiled
afresh and written back the way Python writes ``.pyc`` files: atomically (a private temporary file
renamed over the old one), never when ``sys.dont_write_bytecode`` (``PYTHONDONTWRITEBYTECODE``) is
set, and silently not at all where the directory is not writable. An unreadable, truncated or
foreign file is a cache miss, never an error. The file is ``marshal`` data of this interpreter
(``sys.implementation.cache_tag`` is in its name), trusted as Python trusts its ``.pyc`` files.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
from types import CodeType

__all__ = ["DEFAULT_CACHE", "code_objects", "store"]

#: ``{name: (source, filename)}`` in, ``{name: code}`` out
Sources = dict[str, tuple[str, str]]

DEFAULT_CACHE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "__pycache__", f"_entrypoints.{sys.implementation.cache_tag}.marshal"
)
_FORMAT = 1  # bumped when the file's layout changes


def code_objects(sources: Sources, cache: str | None = DEFAULT_CACHE) -> dict[str, CodeType]:
    """The code of every ``(source, filename)``, from ``cache`` when it holds exactly these
    sources; otherwise compiled, and written to ``cache`` for the next process (None: no cache)."""
    if cache is not None:
        cached = _read(cache, sources)
        if cached is not None:
            return cached
    codes = _compile(sources)
    if cache is not None and not sys.dont_write_bytecode:
        _write(cache, sources, codes)
    return codes


def store(cache: str, sources: Sources) -> None:
    """Compile ``sources`` into ``cache`` whatever ``sys.dont_write_bytecode`` says (the build
    does this, as pip compiles a wheel's ``.pyc`` files at install); OSError when it cannot."""
    _write(cache, sources, _compile(sources), quiet=False)


def _compile(sources: Sources) -> dict[str, CodeType]:
    return {name: compile(source, filename, "exec") for name, (source, filename) in sources.items()}


def _read(cache: str, sources: Sources) -> dict[str, CodeType] | None:
    """The cached code when the file holds these sources and filenames exactly; None otherwise."""
    try:
        with open(cache, "rb") as file:
            stored = marshal.loads(file.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(stored, tuple) or len(stored) != 2 or stored[0] != _FORMAT or not isinstance(stored[1], dict):
        return None
    entries = stored[1]
    if entries.keys() != sources.keys():
        return None
    codes = {}
    for name, (source, filename) in sources.items():
        entry = entries[name]
        if (
            not isinstance(entry, tuple) or len(entry) != 2 or entry[0] != source
            or not isinstance(entry[1], CodeType) or entry[1].co_filename != filename
        ):
            return None
        codes[name] = entry[1]
    return codes


def _write(cache: str, sources: Sources, codes: dict[str, CodeType], quiet: bool = True) -> None:
    """Replace ``cache`` atomically; a failure leaves it as it was (raised unless ``quiet``)."""
    data = marshal.dumps((_FORMAT, {name: (sources[name][0], codes[name]) for name in sources}))
    temporary = f"{cache}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, cache)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if not quiet:
            raise
