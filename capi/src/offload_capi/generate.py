"""Write (or, with ``--check``, compare) the generated files of offload-capi: ``OffloadAPI.h`` and
the C entry points (one source for every ABI level), from offload's API table.

    python -m offload_capi.generate [--check] [CAPI_FOLDER]

``CAPI_FOLDER`` is the distribution's folder of a checkout (default: found from this file).
Exit status 1 with ``--check`` when a file differs from what the table generates.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._abi import ABIS
from ._csource import source
from ._header import header


def outputs(folder: Path) -> dict[Path, str]:
    """``{path: text}`` of every generated file under the distribution folder ``folder``."""
    files = {}
    abis = [make() for make in ABIS.values()]
    for abi in abis:
        include = folder / "src" / "offload_capi" / "include"
        if abi.name != "llvm22":  # LLVM 22's is the default ABI: include/offload/; the others under their name
            include = include / abi.name
        files[include / "offload" / "OffloadAPI.h"] = header(abi)
    files[folder / "csrc" / "entry.c"] = source(abis)  # every level's, compiled once per level
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offload_capi.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("folder", nargs="?", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs(args.folder).items():
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for path in stale:
        print(f"stale: {path} (regenerate: python -m offload_capi.generate)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
