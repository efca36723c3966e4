"""Write the generated files of offload-capi from offload's API table: each ABI level's
``OffloadAPI.h`` (``include/offload/`` for LLVM 22's, ``include/<level>/offload/`` for the others)
and the C entry points of every level in one source (``entry.c``), into a folder.

    python -m offload_capi.generate OUT

The distribution's build runs it (``setup.py``: into the built package's ``include/``); nothing it
writes is checked in. It imports the table alone (``_abi``), so it runs in a bare interpreter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._abi import ABIS
from ._csource import source
from ._header import header


def outputs(folder: Path) -> dict[Path, str]:
    """``{path: text}`` of every generated file under ``folder``."""
    files = {}
    abis = [make() for make in ABIS.values()]
    for abi in abis:
        include = folder / "include"
        if abi.name != "llvm22":  # LLVM 22's is the default ABI: include/offload/; the others under their name
            include = include / abi.name
        files[include / "offload" / "OffloadAPI.h"] = header(abi)
    files[folder / "entry.c"] = source(abis)  # every level's, compiled once per level
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offload_capi.generate", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where to write include/ and entry.c")
    args = parser.parse_args(argv)
    for path, text in outputs(args.folder).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
