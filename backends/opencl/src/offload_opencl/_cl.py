"""PyOpenCL, imported on first use: the backend's only import of ``pyopencl``.

The other modules ``from . import _cl as cl`` and write ``cl.CommandQueue``, ``cl.Error`` as they
would with PyOpenCL itself; the first attribute read here imports PyOpenCL (80-83 ms with numpy,
measured on the project's 2-vCPU machine) and each name read is then kept in this module, so a
later read is a plain module attribute. ``olInit`` reads nothing here: discovery and device
info go through the ICD loader directly (``_icd``), and PyOpenCL arrives with the first
allocation, program, queue or other driver object.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from types import ModuleType
from typing import Any

from offload import ErrorCode, OffloadError

__all__ = ["INSTALL", "installed"]

INSTALL = "pip install 'pyopencl>=2024.1', or reinstall offload-opencl, which requires it"

_lock = threading.Lock()
_module: ModuleType | None = None


def installed() -> bool:
    """Whether PyOpenCL can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec("pyopencl") is not None
    except (ImportError, ValueError):  # a parent that fails, or a module without a spec
        return False


def _pyopencl() -> ModuleType:
    global _module
    with _lock:
        if _module is None:
            try:
                _module = importlib.import_module("pyopencl")  # 80-83 ms (numpy included), spared at olInit
            except ImportError as exc:
                raise OffloadError(ErrorCode.BACKEND_FAILURE, f"offload-opencl cannot import PyOpenCL ({exc}): {INSTALL}") from exc
        return _module


def __getattr__(name: str) -> Any:
    """``pyopencl.<name>``, importing PyOpenCL the first time (PEP 562)."""
    if name.startswith("__"):  # module protocol probes (__path__, __file__ ...) are not PyOpenCL's
        raise AttributeError(name)
    value = getattr(_pyopencl(), name)
    globals()[name] = value
    return value
