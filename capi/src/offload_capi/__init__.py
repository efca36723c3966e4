"""offload-capi: liboffload's C ABI (``libLLVMOffload.so``, ``offload/OffloadAPI.h``) over offload.

One library and header per ABI level: ``llvm22`` (LLVM 22's, the default: ``libLLVMOffload.so.22.1``),
``r1`` (R1's, early 2026: ``libLLVMOffload.so.23.0git``) and ``main`` (liboffload main's: contexts,
``olInit(const ol_init_args_t *)``, per-argument launches; ``libLLVMOffload.so.23.0git`` too). The
headers are generated from offload's API table when the distribution is built. ``libdir(abi)`` is the folder holding
the library (for ``LD_LIBRARY_PATH`` and ``-L``), ``includedir(abi)`` the folder holding
``offload/OffloadAPI.h`` (for ``-I``). ``python -m offload_capi`` prints them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ABIS", "SONAME", "includedir", "libdir", "library"]

#: ABI level -> (its folder under lib/ and include/, its SONAME)
ABIS = {"llvm22": ("", "libLLVMOffload.so.22.1"), "r1": ("r1", "libLLVMOffload.so.23.0git"),
        "main": ("main", "libLLVMOffload.so.23.0git")}
SONAME = ABIS["llvm22"][1]
_HERE = Path(__file__).resolve().parent


def _abi(abi: str) -> tuple[str, str]:
    if abi not in ABIS:
        raise ValueError(f"offload-capi: unknown ABI level {abi!r}; known: {', '.join(ABIS)}")
    return ABIS[abi]


def libdir(abi: str = "llvm22") -> Path:
    """The folder of the library of ABI level ``abi`` (and its ``libLLVMOffload.so``)."""
    return _HERE / "lib" / _abi(abi)[0]


def library(abi: str = "llvm22") -> Path:
    """The library itself (FileNotFoundError when this installation was built without it)."""
    path = libdir(abi) / _abi(abi)[1]
    if not path.is_file():
        raise FileNotFoundError(f"offload-capi: {path} is missing: reinstall offload-capi (pip builds it)")
    return path


def includedir(abi: str = "llvm22") -> Path:
    """The folder holding ``offload/OffloadAPI.h`` of ABI level ``abi``."""
    return _HERE / "include" / _abi(abi)[0]
