"""offload-capi: liboffload's C ABI (``libLLVMOffload.so.22.1``, ``offload/OffloadAPI.h``) over offload.

``libdir()`` is the folder holding the library (for ``LD_LIBRARY_PATH`` and ``-L``), ``includedir()``
the folder holding ``offload/OffloadAPI.h`` (for ``-I``). ``python -m offload_capi`` prints them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SONAME", "includedir", "libdir", "library"]

SONAME = "libLLVMOffload.so.22.1"
_HERE = Path(__file__).resolve().parent


def libdir() -> Path:
    """The folder of ``libLLVMOffload.so.22.1`` (and ``libLLVMOffload.so``)."""
    return _HERE / "lib"


def library() -> Path:
    """The library itself (FileNotFoundError when this installation was built without it)."""
    path = libdir() / SONAME
    if not path.is_file():
        raise FileNotFoundError(f"offload-capi: {path} is missing: reinstall offload-capi (pip builds it)")
    return path


def includedir() -> Path:
    """The folder holding ``offload/OffloadAPI.h``."""
    return _HERE / "include"
