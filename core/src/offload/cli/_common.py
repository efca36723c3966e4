"""What every subcommand shares: exit codes, the balanced session, device lists, formatting."""

from __future__ import annotations

import contextlib
import enum
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import offload as ol

DEFAULT_SIZE = 1 << 20
SAXPY_A = 2.5
_ERROR_PREFIX = "offload: "

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_NOTHING = 2
EXIT_INTERRUPTED = 130


@contextlib.contextmanager
def _session() -> Iterator[None]:
    """``olInit`` … ``olShutDown``, balanced even when the body raises.

    Backend-skip warnings are silenced: the commands report skips themselves. A shutdown error is
    raised unless another exception is already on its way out (then it is printed to stderr).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ol.OffloadBackendWarning)
        ol.olInit()
    try:
        yield
    except BaseException:
        try:
            ol.olShutDown()
        except ol.OffloadError as error:
            print(f"{_ERROR_PREFIX}olShutDown failed: {error}", file=sys.stderr)
        raise
    ol.olShutDown()


def _devices() -> list[ol.DeviceHandle]:
    found: list[ol.DeviceHandle] = []

    def collect(device: ol.DeviceHandle, _: object) -> bool:
        found.append(device)
        return True

    ol.olIterateDevices(collect)
    return found


def _platforms(devices: Sequence[ol.DeviceHandle]) -> list[tuple[ol.PlatformHandle, list[ol.DeviceHandle]]]:
    """The platforms of ``devices`` in first-seen order, each with its devices."""
    grouped: dict[int, tuple[ol.PlatformHandle, list[ol.DeviceHandle]]] = {}
    for device in devices:
        platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
        grouped.setdefault(id(platform), (platform, []))[1].append(device)
    return list(grouped.values())


def _platform_name(platform: ol.PlatformHandle) -> str:
    return str(ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME))


@dataclass(frozen=True)
class PropertyError:
    """A property query that raised: shown as ``<error: CODE>``."""

    code: str
    details: str


def format_value(value: Any) -> str:
    """A property value for people: enum names without prefix, Dimensions as ``x,y,z``."""
    if isinstance(value, PropertyError):
        return f"<error: {value.code}>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.IntFlag):
        names = flag_names(value)
        return " | ".join(names) if names else "0"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, ol.Dimensions):
        return f"{value.x},{value.y},{value.z}"
    if isinstance(value, ol.PlatformHandle):
        return value.name
    return str(value)


def flag_names(value: enum.IntFlag) -> list[str]:
    """The names of the single-bit members set in ``value``, lowest bit first."""
    return [m.name for m in type(value) if m.value and (value & m.value) == m.value and m.name]


def json_value(value: Any) -> Any:
    """A property value for JSON: enums by name, flags as lists of names."""
    if isinstance(value, PropertyError):
        return {"error": value.code, "details": value.details}
    if isinstance(value, bool):
        return value
    if isinstance(value, enum.IntFlag):
        return flag_names(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, ol.Dimensions):
        return {"x": value.x, "y": value.y, "z": value.z}
    if isinstance(value, ol.PlatformHandle):
        return value.name
    return value


def format_table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as left-aligned columns (the last column is not padded)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [indent + "  ".join([*(c.ljust(w) for c, w in zip(row, widths)), row[-1]]).rstrip() for row in rows]


def gb_per_s(nbytes: int, seconds: float) -> float:
    """Throughput in GB/s (10^9 bytes), 0 for a zero or negative duration."""
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def format_bytes(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def _error_code(error: ol.OffloadError) -> str:
    return error.code.name


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats replaced by None (strict JSON has no Infinity/NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _print_json(document: Any, out: TextIO) -> None:
    json.dump(_finite(document), out, indent=2, allow_nan=False)
    out.write("\n")


def _query(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ol.OffloadError as error:
        return PropertyError(_error_code(error), error.details)
