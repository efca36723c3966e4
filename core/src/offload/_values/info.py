"""Types of the info properties: how olGet*Info converts a value and what olGet*InfoSize reports
(the C size in bytes: strings include the NUL, enums and uint32 4, uint64, size_t, pointers and
handles 8, ol_dimensions_t 12, bool 1)."""

from __future__ import annotations

import enum
import operator
from collections.abc import Container, Mapping
from types import MappingProxyType
from typing import Any

from .enums import (
    AllocType,
    ContextInfo,
    DeviceFpCapabilityFlag,
    DeviceInfo,
    DeviceType,
    ErrorCode,
    EventInfo,
    MemInfo,
    PlatformBackend,
    PlatformInfo,
    QueueInfo,
    SymbolInfo,
    from_c,
)
from .errors import OffloadError
from .types import Dimensions


class Kind(enum.Enum):
    STRING = "char[]"
    U32 = "uint32_t"
    U64 = "uint64_t"
    SIZE = "size_t"
    BOOL = "bool"
    HANDLE = "handle"
    HANDLES = "handle[]"  # an array of handles (OL_CONTEXT_INFO_DEVICES): 8 bytes each
    POINTER = "void *"
    DIMENSIONS = "ol_dimensions_t"
    ENUM = "enum"


_FIXED_SIZES = {
    Kind.U32: 4,
    Kind.ENUM: 4,
    Kind.U64: 8,
    Kind.SIZE: 8,
    Kind.HANDLE: 8,
    Kind.POINTER: 8,
    Kind.BOOL: 1,
    Kind.DIMENSIONS: 12,
}

#: The exclusive upper bound of each unsigned kind (a backend's value outside [0, bound) is its
#: failure: BACKEND_FAILURE, naming the property, the value and the C type).
_LIMITS = {Kind.U32: 1 << 32, Kind.U64: 1 << 64, Kind.SIZE: 1 << 64, Kind.POINTER: 1 << 64}

_U32 = Kind.U32
DEVICE_INFO: dict[DeviceInfo, tuple[Kind, type | None]] = {
    DeviceInfo.TYPE: (Kind.ENUM, DeviceType),
    DeviceInfo.PLATFORM: (Kind.HANDLE, None),
    DeviceInfo.NAME: (Kind.STRING, None),
    DeviceInfo.PRODUCT_NAME: (Kind.STRING, None),
    DeviceInfo.UID: (Kind.STRING, None),
    DeviceInfo.VENDOR: (Kind.STRING, None),
    DeviceInfo.DRIVER_VERSION: (Kind.STRING, None),
    DeviceInfo.MAX_WORK_GROUP_SIZE: (_U32, None),
    DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: (Kind.DIMENSIONS, None),
    DeviceInfo.MAX_WORK_SIZE: (_U32, None),
    DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: (Kind.DIMENSIONS, None),
    DeviceInfo.VENDOR_ID: (_U32, None),
    DeviceInfo.NUM_COMPUTE_UNITS: (_U32, None),
    DeviceInfo.MAX_CLOCK_FREQUENCY: (_U32, None),
    DeviceInfo.MEMORY_CLOCK_RATE: (_U32, None),
    DeviceInfo.ADDRESS_BITS: (_U32, None),
    DeviceInfo.MAX_MEM_ALLOC_SIZE: (Kind.U64, None),
    DeviceInfo.GLOBAL_MEM_SIZE: (Kind.U64, None),
    DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: (Kind.U64, None),
    DeviceInfo.NUM_LANES: (_U32, None),
    DeviceInfo.SINGLE_FP_CONFIG: (Kind.ENUM, DeviceFpCapabilityFlag),
    DeviceInfo.DOUBLE_FP_CONFIG: (Kind.ENUM, DeviceFpCapabilityFlag),
    DeviceInfo.HALF_FP_CONFIG: (Kind.ENUM, DeviceFpCapabilityFlag),
    **{p: (_U32, None) for p in DeviceInfo if p.name.startswith("NATIVE_VECTOR_WIDTH_")},
    DeviceInfo.SINGLE_FP_SUPPORT: (Kind.BOOL, None),
    DeviceInfo.DOUBLE_FP_SUPPORT: (Kind.BOOL, None),
    DeviceInfo.HALF_FP_SUPPORT: (Kind.BOOL, None),
    DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT: (Kind.BOOL, None),
    DeviceInfo.DRIVER_ID: (_U32, None),
}
assert set(DEVICE_INFO) == set(DeviceInfo)

PLATFORM_INFO: dict[PlatformInfo, tuple[Kind, type | None]] = {
    PlatformInfo.NAME: (Kind.STRING, None),
    PlatformInfo.VENDOR_NAME: (Kind.STRING, None),
    PlatformInfo.VERSION: (Kind.STRING, None),
    PlatformInfo.BACKEND: (Kind.ENUM, PlatformBackend),
}
QUEUE_INFO: dict[QueueInfo, tuple[Kind, type | None]] = {
    QueueInfo.DEVICE: (Kind.HANDLE, None),
    QueueInfo.EMPTY: (Kind.BOOL, None),
    QueueInfo.CONTEXT: (Kind.HANDLE, None),
}
EVENT_INFO: dict[EventInfo, tuple[Kind, type | None]] = {
    EventInfo.QUEUE: (Kind.HANDLE, None),
    EventInfo.IS_COMPLETE: (Kind.BOOL, None),
}
SYMBOL_INFO: dict[SymbolInfo, tuple[Kind, type | None]] = {
    SymbolInfo.KIND: (Kind.ENUM, None),
    SymbolInfo.GLOBAL_VARIABLE_ADDRESS: (Kind.POINTER, None),
    SymbolInfo.GLOBAL_VARIABLE_SIZE: (Kind.SIZE, None),
    SymbolInfo.NAME: (Kind.STRING, None),
}
CONTEXT_INFO: dict[ContextInfo, tuple[Kind, type | None]] = {
    ContextInfo.NUM_DEVICES: (Kind.SIZE, None),
    ContextInfo.DEVICES: (Kind.HANDLES, None),
    ContextInfo.PLATFORM: (Kind.HANDLE, None),
}
MEM_INFO: dict[MemInfo, tuple[Kind, type | None]] = {
    MemInfo.DEVICE: (Kind.HANDLE, None),
    MemInfo.BASE: (Kind.POINTER, None),
    MemInfo.SIZE: (Kind.SIZE, None),
    MemInfo.TYPE: (Kind.ENUM, AllocType),
}


def lookup(table: Container[Any], enum_type: type, prop: Any, what: str, level: str = "r1") -> Any:
    """The enum member for ``prop``; INVALID_ENUMERATION ("<what> enum 'N' is invalid") if unknown.

    A member is taken as it is (names are the Python contract at every level); a number is read
    as the C number at API ``level`` (``_values.enums.from_c``)."""
    if type(prop) is enum_type:
        return prop
    if isinstance(prop, enum.Enum):  # PlatformInfo.NAME given for a DeviceInfo: its number means nothing here
        raise OffloadError(
            ErrorCode.INVALID_ENUMERATION, f"{what} enum '{type(prop).__name__}.{prop.name}' is invalid: not a {enum_type.__name__}"
        )
    try:
        member = from_c(enum_type, prop if type(prop) is int or isinstance(prop, bool) else operator.index(prop), level)
    except (ValueError, TypeError):
        member = None
    if member is None or member not in table:
        raise OffloadError(ErrorCode.INVALID_ENUMERATION, f"{what} enum '{prop}' is invalid")
    return member


def convert(kind: Kind, enum_type: type | None, value: Any, prop_name: str) -> Any:
    """Normalise a backend's value to the property's Python type, checking the range of its C type."""
    if kind is Kind.STRING:
        return str(value)
    if kind in _LIMITS:
        value = int(value)
        if not 0 <= value < _LIMITS[kind]:
            raise OffloadError(
                ErrorCode.BACKEND_FAILURE,
                f"{prop_name}: the backend answered {value}, out of range for its C type {kind.value}",
            )
        return value
    if kind is Kind.BOOL:
        return bool(value)
    if kind is Kind.DIMENSIONS:
        return value if type(value) is Dimensions else Dimensions(*value)
    if kind is Kind.ENUM and enum_type is not None:
        return enum_type(value)
    return value


def c_size(kind: Kind, value: Any) -> int:
    """The C size in bytes of a property value."""
    if kind is Kind.STRING:
        return len(str(value).encode()) + 1
    if kind is Kind.HANDLES:
        return 8 * len(value)
    return _FIXED_SIZES[kind]


def c_type(kind: Kind, enum_type: type | None) -> str:
    """The C type a property's value has (``uint32_t``, ``ol_device_type_t``, ...)."""
    if kind is Kind.ENUM and enum_type is not None:
        return "ol_" + "".join("_" + c.lower() if c.isupper() else c for c in enum_type.__name__).lstrip("_") + "_t"
    return kind.value


#: The C type of every device property (``get_device_info``): "char[]", "uint32_t", "uint64_t",
#: "bool", "ol_dimensions_t", "ol_device_type_t", "ol_device_fp_capability_flag_t" ("handle":
#: PLATFORM, the core's). Published as ``offload.hookspecs.DEVICE_INFO_TYPES``.
DEVICE_INFO_TYPES: Mapping[DeviceInfo, str] = MappingProxyType(
    {prop: c_type(kind, enum_type) for prop, (kind, enum_type) in DEVICE_INFO.items()}
)
