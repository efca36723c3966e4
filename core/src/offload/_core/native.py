"""Whether the compiled path runs (``OFFLOAD_COMPILED``), and the native entry points a backend
hands it (``hookspecs.native_entry_points`` / ``native_word``, ``include/offload_native.h``).

The compiled path is ``offload._compiled._fastpath``, a C extension built with offload-core where a
compiler was found (``core/setup.py``: optional); ``_compiled.interface`` decides whether it runs
(``OFFLOAD_COMPILED=0`` keeps the pure-Python path). Without the compiled path no backend is asked
for entry points: nothing would call them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._compiled.interface import COMPILED_ENV, ENABLED, _fastpath

if TYPE_CHECKING:
    from .handles import Device
    from .bound import BoundBackend

__all__ = ["COMPILED_ENV", "ENABLED", "WORD_LIMIT", "_fastpath", "entry_points", "word"]  # _fastpath: for _api.compiled

WORD_LIMIT = 1 << 64


def entry_points(bound: BoundBackend, native: Any) -> Any:
    """The device's ``native_entry_points`` capsule when the compiled path runs and the capsule is
    one this core calls (its name, ABI version and size); None otherwise (the Python hooks)."""
    if not ENABLED or "native_entry_points" not in bound.implemented:
        return None
    capsule = bound.native_entry_points(native)
    if capsule is None or not _fastpath.entry_points_ok(capsule):  # (ENABLED: it was built)
        return None
    return capsule


def word(device: Device, native: Any) -> int | None:
    """The backend's ``native_word`` for ``native`` (the device itself, a queue, a kernel) when the
    device has entry points; None (the Python hooks) otherwise or for an answer that is no word."""
    if device.entry_points is None or "native_word" not in device.backend.implemented:
        return None
    answer = device.backend.native_word(device.native, native)
    if type(answer) is not int or not 0 < answer < WORD_LIMIT:
        return None
    return answer
