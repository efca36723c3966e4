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
import threading
from types import ModuleType
from typing import Any

__all__: list[str] = []

_lock = threading.Lock()
_module: ModuleType | None = None


def _pyopencl() -> ModuleType:
    global _module
    with _lock:
        if _module is None:
            _module = importlib.import_module("pyopencl")  # 80-83 ms (numpy included), spared at olInit
        return _module


def __getattr__(name: str) -> Any:
    """``pyopencl.<name>``, importing PyOpenCL the first time (PEP 562)."""
    if name.startswith("__"):  # module protocol probes (__path__, __file__ ...) are not PyOpenCL's
        raise AttributeError(name)
    value = getattr(_pyopencl(), name)
    globals()[name] = value
    return value
