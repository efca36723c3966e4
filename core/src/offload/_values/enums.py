"""The enumerations of the ol* API, numbered as liboffload snapshot R1 (early 2026).

Names are the Python contract; the numbers are the C ones at API level ``r1`` (the default). The
enumerators liboffload's main branch added after R1 are appended after R1's last value, so every R1
number stays what it was. Where main renumbered (``OL_ERRC_INVALID_CONTEXT`` inserted before
``SYMBOL_KIND``, ``OL_QUEUE_INFO_CONTEXT`` before ``EMPTY``), ``MAIN_NUMBERS`` holds main's C
numbers: ``c_value(member, "main")`` and ``from_c(cls, number, "main")`` convert, and
``c_constants("main")`` is main's table.

Each class has its C prefix in ``C_PREFIX`` so that tracing prints the C enumerator name
(``OL_ALLOC_TYPE_DEVICE``) and so that the C spellings can be exported as module constants.
Every C enum also has a ``*_FORCE_UINT32 = 0x7fffffff`` value, which is never valid: it is
what liboffload's tests pass as "an invalid enumerator", and it is exported too.
"""

from __future__ import annotations

import enum
from typing import Any

FORCE_UINT32 = 0x7FFFFFFF


class _EnumType(enum.EnumType):
    """``enum.EnumType`` whose ``dir()`` lists the members, not every method inherited from int.

    Only presentation changes: ``help(offload)`` and IDE completion show the enumerators instead
    of int's methods (``from_bytes``, ``bit_length``, ...), which members still have.
    """

    def __dir__(cls) -> list[str]:
        return sorted({"__class__", "__doc__", "__members__", "__module__", *cls._member_names_})


class ErrorCode(enum.IntEnum, metaclass=_EnumType):
    """``ol_errc_t``."""

    SUCCESS = 0
    UNKNOWN = 1
    HOST_IO = 2
    INVALID_BINARY = 3
    INVALID_NULL_POINTER = 4
    INVALID_ARGUMENT = 5
    NOT_FOUND = 6
    OUT_OF_RESOURCES = 7
    INVALID_SIZE = 8
    INVALID_ENUMERATION = 9
    HOST_TOOL_NOT_FOUND = 10
    INVALID_VALUE = 11
    UNIMPLEMENTED = 12
    UNSUPPORTED = 13
    ASSEMBLE_FAILURE = 14
    COMPILE_FAILURE = 15
    LINK_FAILURE = 16
    BACKEND_FAILURE = 17
    UNINITIALIZED = 18
    INVALID_NULL_HANDLE = 19
    INVALID_PLATFORM = 20
    INVALID_DEVICE = 21
    INVALID_QUEUE = 22
    INVALID_EVENT = 23
    SYMBOL_KIND = 24
    INVALID_CONTEXT = 25  # main: 24 (inserted after INVALID_EVENT; SYMBOL_KIND is 25 there)


class PlatformInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_platform_info_t``."""

    NAME = 0
    VENDOR_NAME = 1
    VERSION = 2
    BACKEND = 3


class PlatformBackend(enum.IntEnum, metaclass=_EnumType):
    """``ol_platform_backend_t``."""

    UNKNOWN = 0
    CUDA = 1
    AMDGPU = 2
    LEVEL_ZERO = 3
    HOST = 4


class DeviceType(enum.IntEnum, metaclass=_EnumType):
    """``ol_device_type_t``."""

    DEFAULT = 0
    ALL = 1
    GPU = 2
    CPU = 3
    HOST = 4


class DeviceInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_device_info_t`` (R1 order; NUM_LANES precedes the FP configuration entries)."""

    TYPE = 0
    PLATFORM = 1
    NAME = 2
    PRODUCT_NAME = 3
    UID = 4
    VENDOR = 5
    DRIVER_VERSION = 6
    MAX_WORK_GROUP_SIZE = 7
    MAX_WORK_GROUP_SIZE_PER_DIMENSION = 8
    MAX_WORK_SIZE = 9
    MAX_WORK_SIZE_PER_DIMENSION = 10
    VENDOR_ID = 11
    NUM_COMPUTE_UNITS = 12
    MAX_CLOCK_FREQUENCY = 13
    MEMORY_CLOCK_RATE = 14
    ADDRESS_BITS = 15
    MAX_MEM_ALLOC_SIZE = 16
    GLOBAL_MEM_SIZE = 17
    WORK_GROUP_LOCAL_MEM_SIZE = 18
    NUM_LANES = 19
    SINGLE_FP_CONFIG = 20
    DOUBLE_FP_CONFIG = 21
    HALF_FP_CONFIG = 22
    NATIVE_VECTOR_WIDTH_CHAR = 23
    NATIVE_VECTOR_WIDTH_SHORT = 24
    NATIVE_VECTOR_WIDTH_INT = 25
    NATIVE_VECTOR_WIDTH_LONG = 26
    NATIVE_VECTOR_WIDTH_FLOAT = 27
    NATIVE_VECTOR_WIDTH_DOUBLE = 28
    NATIVE_VECTOR_WIDTH_HALF = 29
    SINGLE_FP_SUPPORT = 30
    DOUBLE_FP_SUPPORT = 31
    HALF_FP_SUPPORT = 32
    COOPERATIVE_LAUNCH_SUPPORT = 33  # main (appended)
    DRIVER_ID = 34  # main (appended)


class DeviceFpCapabilityFlag(enum.IntFlag, metaclass=_EnumType):
    """``ol_device_fp_capability_flag_t`` (bit field)."""

    CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 0
    ROUND_TO_NEAREST = 1 << 1
    ROUND_TO_ZERO = 1 << 2
    ROUND_TO_INF = 1 << 3
    INF_NAN = 1 << 4
    DENORM = 1 << 5
    FMA = 1 << 6
    SOFT_FLOAT = 1 << 7


class AllocType(enum.IntEnum, metaclass=_EnumType):
    """``ol_alloc_type_t``."""

    HOST = 0
    DEVICE = 1
    MANAGED = 2


class MemInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_mem_info_t``."""

    DEVICE = 0
    BASE = 1
    SIZE = 2
    TYPE = 3


class MemoryRegisterFlag(enum.IntFlag, metaclass=_EnumType):
    """``ol_memory_register_flag_t`` (bit field)."""

    LOCK_MEMORY = 1 << 0
    UNLOCK_MEMORY = 1 << 1


class QueueInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_queue_info_t``."""

    DEVICE = 0
    EMPTY = 1
    CONTEXT = 2  # main: 1 (main's order is DEVICE, CONTEXT, EMPTY)


class EventInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_event_info_t``."""

    QUEUE = 0
    IS_COMPLETE = 1


class SymbolKind(enum.IntEnum, metaclass=_EnumType):
    """``ol_symbol_kind_t``."""

    KERNEL = 0
    GLOBAL_VARIABLE = 1


class SymbolInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_symbol_info_t``."""

    KIND = 0
    GLOBAL_VARIABLE_ADDRESS = 1
    GLOBAL_VARIABLE_SIZE = 2
    NAME = 3  # main


class ContextInfo(enum.IntEnum, metaclass=_EnumType):
    """``ol_context_info_t`` (main)."""

    NUM_DEVICES = 0
    DEVICES = 1
    PLATFORM = 2


class EventFlags(enum.IntEnum, metaclass=_EnumType):
    """``ol_event_flags_t`` (main): ENABLE_PROFILING lets olGetEventElapsedTime time the event.

    A plain enum upstream, not a bit field (no ``_flag_t`` / ``_flags_t`` pair; liboffload tests
    ``Flags == OL_EVENT_FLAGS_ENABLE_PROFILING``), so ``OL_EVENT_FLAGS_NONE`` is an enumerator and
    the trace prints the names."""

    NONE = 0
    ENABLE_PROFILING = 1 << 0


class KernelLaunchPropType(enum.IntEnum, metaclass=_EnumType):
    """``ol_kernel_launch_prop_type_t`` (main): NONE ends a C property list; IS_COOPERATIVE takes a bool."""

    NONE = 0
    IS_COOPERATIVE = 1


class MemMigrationFlag(enum.IntFlag, metaclass=_EnumType):
    """``ol_mem_migration_flag_t`` (main; bit field): the direction of an olMemPrefetch."""

    HOST_TO_DEVICE = 1 << 0
    DEVICE_TO_HOST = 1 << 1


C_PREFIX: dict[type[enum.Enum], str] = {
    ErrorCode: "OL_ERRC_",
    PlatformInfo: "OL_PLATFORM_INFO_",
    PlatformBackend: "OL_PLATFORM_BACKEND_",
    DeviceType: "OL_DEVICE_TYPE_",
    DeviceInfo: "OL_DEVICE_INFO_",
    DeviceFpCapabilityFlag: "OL_DEVICE_FP_CAPABILITY_FLAG_",
    AllocType: "OL_ALLOC_TYPE_",
    MemInfo: "OL_MEM_INFO_",
    MemoryRegisterFlag: "OL_MEMORY_REGISTER_FLAG_",
    QueueInfo: "OL_QUEUE_INFO_",
    EventInfo: "OL_EVENT_INFO_",
    SymbolKind: "OL_SYMBOL_KIND_",
    SymbolInfo: "OL_SYMBOL_INFO_",
    ContextInfo: "OL_CONTEXT_INFO_",
    EventFlags: "OL_EVENT_FLAGS_",
    KernelLaunchPropType: "OL_KERNEL_LAUNCH_PROP_TYPE_",
    MemMigrationFlag: "OL_MEM_MIGRATION_FLAG_",
}

API_LEVELS = ("r1", "main")
"""The API levels ``olInit`` accepts: ``r1`` (liboffload R1, the default) and ``main`` (its main branch)."""

def _key(member: Any) -> tuple[type, str]:
    """A member as a set or dict key (IntEnum members of different classes compare equal by value)."""
    return (type(member), member.name)


# The members that exist only at level main (at r1 they are Python-only names, unknown to C).
MAIN_ONLY: frozenset[tuple[type, str]] = frozenset(
    _key(m)
    for m in {
        ErrorCode.INVALID_CONTEXT,
        DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT,
        DeviceInfo.DRIVER_ID,
        QueueInfo.CONTEXT,
        SymbolInfo.NAME,
        *ContextInfo,
        *EventFlags,
        *KernelLaunchPropType,
        *MemMigrationFlag,
    }
)

# main's C numbers where they differ from the Python (= R1) values.
_MAIN_RENUMBERED: tuple[tuple[enum.Enum, int], ...] = (
    (ErrorCode.INVALID_CONTEXT, 24),
    (ErrorCode.SYMBOL_KIND, 25),
    (QueueInfo.CONTEXT, 1),
    (QueueInfo.EMPTY, 2),
)
MAIN_NUMBERS: dict[tuple[type, str], int] = {_key(m): n for m, n in _MAIN_RENUMBERED}
_FROM_MAIN: dict[tuple[type, int], enum.Enum] = {(type(m), n): m for m, n in _MAIN_RENUMBERED}

ENUMS: tuple[type[enum.Enum], ...] = tuple(C_PREFIX)


def c_prefix(cls: type[enum.Enum]) -> str:
    """The C enumerator prefix of one of the ENUMS classes."""
    return C_PREFIX[cls]


def c_name(value: Any) -> str:
    """The C spelling of an enum member (``OL_ALLOC_TYPE_DEVICE``); flags join with ``|``."""
    cls = type(value)
    if isinstance(value, enum.IntFlag):
        names = [c_prefix(cls) + m.name for m in cls if m.value and (value & m.value) == m.value]
        return " | ".join(names) if names else "0"
    return c_prefix(cls) + str(value.name)


def members_at(cls: type[enum.Enum], level: str) -> list[Any]:
    """The members of ``cls`` that exist at API ``level``."""
    return [m for m in cls if level == "main" or _key(m) not in MAIN_ONLY]


def c_value(member: Any, level: str) -> int:
    """The C number of ``member`` at API ``level`` (``r1`` or ``main``)."""
    if level == "main":
        return MAIN_NUMBERS.get(_key(member), int(member))
    return int(member)


def from_c(cls: type[enum.Enum], number: int, level: str) -> Any:
    """The member of ``cls`` whose C number at ``level`` is ``number`` (ValueError if none)."""
    if level == "main":
        found = _FROM_MAIN.get((cls, number))
        if found is not None:
            return found
        member = cls(number)
        if _key(member) in MAIN_NUMBERS:  # its main number differs: this number is another member's
            raise ValueError(number)
        return member
    member = cls(number)
    if not issubclass(cls, enum.IntFlag) and _key(member) in MAIN_ONLY:
        raise ValueError(number)
    return member


def c_constants(level: str = "r1") -> dict[str, int]:
    """Every C spelling (``OL_ERRC_INVALID_SIZE``, ``OL_DEVICE_INFO_FORCE_UINT32``, ...), numbered at
    API ``level``. At ``r1`` the enumerators main added are included with their Python values, so
    that ``offload.OL_ERRC_INVALID_CONTEXT`` exists whichever level a session runs at."""
    table: dict[str, int] = {}
    for cls in ENUMS:
        prefix = c_prefix(cls)
        for member in cls:
            table[prefix + member.name] = c_value(member, level)
        table[prefix + "FORCE_UINT32"] = FORCE_UINT32
    table["OL_DEVICE_INFO_LAST"] = len(members_at(DeviceInfo, level))
    return table
