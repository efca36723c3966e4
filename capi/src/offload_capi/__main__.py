"""``python -m offload_capi [--abi r1] --libdir | --includedir | --library | --cflags | --libs``: where offload-capi's
library and header are, for LD_LIBRARY_PATH and for building C and C++ programs against them."""

from __future__ import annotations

import argparse
import sys

from . import ABIS, includedir, libdir, library


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offload_capi", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--libdir", action="store_true", help="the folder to put on LD_LIBRARY_PATH (and -L)")
    group.add_argument("--includedir", action="store_true", help="the folder holding offload/OffloadAPI.h")
    group.add_argument("--library", action="store_true", help="the path of the library (LLVM 22's: libLLVMOffload.so.22.1)")
    group.add_argument("--cflags", action="store_true", help="compiler flags: -I<includedir>")
    group.add_argument("--libs", action="store_true", help="linker flags: -L<libdir> -lLLVMOffload")
    parser.add_argument("--abi", choices=sorted(ABIS), default="llvm22", help="the ABI level (default: llvm22, LLVM 22's)")
    args = parser.parse_args(argv)
    try:
        library(args.abi)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.libdir:
        print(libdir(args.abi))
    elif args.includedir:
        print(includedir(args.abi))
    elif args.library:
        print(library(args.abi))
    elif args.cflags:
        print(f"-I{includedir(args.abi)}")
    else:
        print(f"-L{libdir(args.abi)} -lLLVMOffload")
    return 0


if __name__ == "__main__":
    sys.exit(main())
