"""Whether the installed hip-python was generated for the HIP runtime that was found.

hip-python's Cython C API (``rocm.bindings.cyhip``, which ``_native`` calls) is compiled against
one ROCm release's headers: a runtime of another HIP minor release can lay its structs out
differently, which no signature check sees. So ``olInit`` compares the two before it imports
hip-python (``load`` in ``_driver``), and a mismatch skips the backend with both versions named.

The HIP version hip-python was generated for: ``rocm.version.HIP_VERSION_TUPLE`` where hip-python
states it (rocm-bindings-core, the 10.x line), else the first two components of the ``hip-python``
distribution's version, the ROCm release, whose HIP has the same major.minor up to ROCm 7.x
(hip-python 6.4.2.555.40: ROCm 6.4.2, HIP 6.4; 10.0.0.0.1.2: ROCm 10.0.0, HIP 7.15). Runtimes
agree when HIP's major.minor agree (the patch is a build number).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from offload import ErrorCode, OffloadError

__all__ = ["Bindings", "HipVersionMismatch", "bindings", "check_match", "hip_version_text", "runtime_version"]

#: The offload-amdgpu extra that pins hip-python to each ROCm line, by that line's HIP major.minor.
EXTRAS: dict[tuple[int, int], str] = {(6, 4): "rocm6-4", (7, 0): "rocm7-0", (7, 1): "rocm7-1", (7, 2): "rocm7-2", (7, 15): "rocm10-0"}


class HipVersionMismatch(OffloadError):
    """hip-python was generated for another HIP release than the runtime's (``UNSUPPORTED``)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNSUPPORTED, message)


@dataclass(frozen=True)
class Bindings:
    """The installed hip-python: its distribution version and the HIP (major, minor) it targets."""

    version: str
    hip: tuple[int, int]
    source: str  # where ``hip`` was read


def hip_version_text(value: int) -> str:
    """HIP_VERSION = major * 10_000_000 + minor * 100_000 + patch, as ``major.minor.patch``."""
    return f"{value // 10_000_000}.{value // 100_000 % 100}.{value % 100_000}"


def runtime_version(library: ctypes.CDLL) -> int:
    """``hipRuntimeGetVersion`` of the loaded runtime library (plain C: safe whatever its release)."""
    value = ctypes.c_int(0)
    status = library.hipRuntimeGetVersion(ctypes.byref(value))
    if status != 0:
        raise OffloadError(ErrorCode.BACKEND_FAILURE, f"hipRuntimeGetVersion failed: hipError_t {status}")
    return value.value


def _hip_of_rocm_version() -> tuple[int, int] | None:
    """``rocm.version.HIP_VERSION_TUPLE[:2]`` where hip-python ships it (a pure-Python module)."""
    try:
        from rocm import version
    except ImportError:
        return None
    found: Any = getattr(version, "HIP_VERSION_TUPLE", None)
    if not isinstance(found, tuple) or len(found) < 2 or not all(isinstance(v, int) for v in found[:2]):
        return None
    return int(found[0]), int(found[1])


def bindings() -> Bindings:
    """The installed hip-python; ``ImportError`` naming it when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("hip-python")
    except PackageNotFoundError as exc:
        raise ImportError("the hip-python distribution is not installed") from exc
    stated = _hip_of_rocm_version()
    if stated is not None:
        return Bindings(installed, stated, "rocm.version.HIP_VERSION_TUPLE")
    parts = installed.split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        raise HipVersionMismatch(f"cannot tell which HIP release hip-python {installed} was generated for")
    return Bindings(installed, (int(parts[0]), int(parts[1])), "its ROCm release")


def check_match(found: Bindings, runtime: int, path: str) -> None:
    """Raise ``HipVersionMismatch`` naming both versions unless ``found`` targets ``runtime``'s HIP."""
    major, minor = runtime // 10_000_000, runtime // 100_000 % 100
    if (major, minor) == found.hip:
        return
    extra = EXTRAS.get((major, minor))
    advice = (
        f"install the hip-python of that ROCm line: pip install 'offload-amdgpu[{extra}]'"
        if extra
        else f"no offload-amdgpu extra pins a hip-python for HIP {major}.{minor} (extras: {', '.join(sorted(EXTRAS.values()))})"
    )
    raise HipVersionMismatch(
        f"hip-python {found.version} is generated for HIP {found.hip[0]}.{found.hip[1]} ({found.source}), but the HIP "
        f"runtime {path} is HIP {hip_version_text(runtime)} (hipRuntimeGetVersion {runtime}); its C API would be "
        f"called with another release's struct layouts: {advice}"
    )
