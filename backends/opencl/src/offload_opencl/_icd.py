"""The OpenCL ICD loader through ctypes, without PyOpenCL: what ``olInit`` needs (platforms,
devices, their names and properties) at the cost of loading the driver, not of importing
PyOpenCL and numpy (~75 ms).

``Loader.open()`` loads the very library PyOpenCL's ``_cl`` extension links to (``_locate``: the
ICD loader bundled in PyOpenCL's wheel, or the system's or conda's ``libOpenCL.so.1``), so the
``cl_platform_id`` and ``cl_device_id`` values read here are the ones PyOpenCL later wraps
(``from_int_ptr``), whichever of the two loads it first. Before the loader's first platform scan
(which it does once per process) it sets ``PYOPENCL_HOME`` as PyOpenCL's ``__init__`` does (the
wheel's ocl-icd reads the wheel's ``pocl.icd`` there, and crashes where it is unset) and loads
the drivers the ``.icd`` files name by bare name from the folders PyOpenCL's extension makes the
dynamic linker search (``Located.preload_drivers``).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Sequence

from ._locate import SYSTEM_LOADER, Located, locate

__all__ = [
    "DEVICE_IL_VERSION", "DEVICE_NAME", "DEVICE_SVM_CAPABILITIES", "IcdError", "Loader", "LoaderUnavailable",
    "PLATFORM_NAME", "PLATFORM_VENDOR", "PLATFORM_VERSION", "SYSTEM_LOADER",
]  # fmt: skip

#: cl_platform_info and cl_device_info values read at discovery (CL/cl.h)
PLATFORM_VERSION = 0x0901
PLATFORM_NAME = 0x0902
PLATFORM_VENDOR = 0x0903
DEVICE_NAME = 0x102B
DEVICE_SVM_CAPABILITIES = 0x1053
DEVICE_IL_VERSION = 0x105B
_DEVICE_TYPE_ALL = 0xFFFFFFFF
#: The few statuses a probe meets, named (CL/cl.h, CL/cl_ext.h); any other is given as a number.
_STATUS_NAMES = {
    -1: "CL_DEVICE_NOT_FOUND",
    -6: "CL_OUT_OF_HOST_MEMORY",
    -30: "CL_INVALID_VALUE",
    -32: "CL_INVALID_PLATFORM",
    -33: "CL_INVALID_DEVICE",
    -1001: "CL_PLATFORM_NOT_FOUND_KHR: an ICD loader without drivers",
}
_handle = ctypes.c_void_p
_uint = ctypes.c_uint32
_P_UINT = ctypes.POINTER(_uint)
_P_SIZE = ctypes.POINTER(ctypes.c_size_t)


class LoaderUnavailable(Exception):
    """No OpenCL ICD loader could be loaded (the reason is the message)."""


class IcdError(Exception):
    """An OpenCL call answered a status other than CL_SUCCESS."""

    def __init__(self, call: str, status: int) -> None:
        name = _STATUS_NAMES.get(status)
        super().__init__(f"{call} failed: OpenCL status {status}" + (f" ({name})" if name else ""))
        self.call = call
        self.status = status


class Loader:
    """The OpenCL entry points discovery and device info need, with their C signatures declared
    (ctypes must not guess: a pointer passed as an int is truncated)."""

    _opened: Loader | None = None
    _lock = threading.Lock()

    def __init__(self, path: str, located: Located | None = None) -> None:
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            where = f"; {located.describe()}" if located is not None else ""
            raise LoaderUnavailable(f"no OpenCL ICD loader: {path} cannot be loaded ({exc}){where}") from exc
        self.path = path
        self.located = located
        self._platform_ids = lib.clGetPlatformIDs
        self._platform_ids.argtypes = [_uint, ctypes.POINTER(_handle), _P_UINT]
        self._platform_ids.restype = ctypes.c_int32
        self._device_ids = lib.clGetDeviceIDs
        self._device_ids.argtypes = [_handle, ctypes.c_uint64, _uint, ctypes.POINTER(_handle), _P_UINT]
        self._device_ids.restype = ctypes.c_int32
        self._platform_info = lib.clGetPlatformInfo
        self._device_info = lib.clGetDeviceInfo
        for function in (self._platform_info, self._device_info):
            function.argtypes = [_handle, _uint, ctypes.c_size_t, ctypes.c_void_p, _P_SIZE]
            function.restype = ctypes.c_int32

    @classmethod
    def open(cls) -> Loader:
        """The process's loader (loaded once), PyOpenCL's, with its drivers made loadable; raises
        ``LoaderUnavailable`` naming the library that could not be loaded and what was searched."""
        with cls._lock:
            if cls._opened is None:
                located = locate()
                if located.pyopencl_home is not None:  # as pyopencl/__init__.py does (it will again)
                    os.environ["PYOPENCL_HOME"] = located.pyopencl_home
                located.preload_drivers()
                cls._opened = cls(located.loader, located)
            return cls._opened

    def no_platform_reason(self, error: IcdError) -> str:
        """Why no platform was found: the loader's answer, what was searched, each driver's error."""
        if self.located is None:
            return str(error)
        errors = self.located.driver_errors()
        return f"{error}; {self.located.describe()}" + (f"; drivers that cannot be loaded: {'; '.join(errors)}" if errors else "")

    def platforms(self) -> list[int]:
        """Every platform's ``cl_platform_id``; raises ``IcdError`` (CL_PLATFORM_NOT_FOUND_KHR
        where the loader finds no driver)."""
        count = _uint(0)
        self._check("clGetPlatformIDs", self._platform_ids(0, None, ctypes.byref(count)))
        ids = (_handle * count.value)()
        self._check("clGetPlatformIDs", self._platform_ids(count.value, ids, None))
        return [int(i or 0) for i in ids]

    def devices(self, platform: int) -> list[int]:
        """Every ``cl_device_id`` of ``platform`` (none: an empty list, not an error)."""
        count = _uint(0)
        status = self._device_ids(platform, _DEVICE_TYPE_ALL, 0, None, ctypes.byref(count))
        if status == -1:  # CL_DEVICE_NOT_FOUND
            return []
        self._check("clGetDeviceIDs", status)
        ids = (_handle * count.value)()
        self._check("clGetDeviceIDs", self._device_ids(platform, _DEVICE_TYPE_ALL, count.value, ids, None))
        return [int(i or 0) for i in ids]

    def platform_text(self, platform: int, param: int) -> str:
        """A string property of ``platform`` (``clGetPlatformInfo``), without its NUL."""
        return self._text(self._platform_info, "clGetPlatformInfo", platform, param)

    def device_text(self, device: int, param: int) -> str:
        """A string property of ``device`` (``clGetDeviceInfo``), without its NUL."""
        return self._text(self._device_info, "clGetDeviceInfo", device, param)

    def device_value(self, device: int, param: int, ctype: type[ctypes._SimpleCData[int]]) -> int:
        """A scalar property of ``device`` of C type ``ctype`` (cl_uint, cl_ulong, size_t, a bitfield)."""
        value = ctype()
        status = self._device_info(device, param, ctypes.sizeof(value), ctypes.byref(value), None)
        self._check(f"clGetDeviceInfo({param:#x})", status)
        return int(value.value)

    def device_sizes(self, device: int, param: int) -> Sequence[int]:
        """A ``size_t[]`` property of ``device`` (e.g. CL_DEVICE_MAX_WORK_ITEM_SIZES)."""
        raw = self._raw(self._device_info, f"clGetDeviceInfo({param:#x})", device, param)
        count = len(raw) // ctypes.sizeof(ctypes.c_size_t)
        return list((ctypes.c_size_t * count).from_buffer_copy(raw[: count * ctypes.sizeof(ctypes.c_size_t)]))

    def _text(self, function: Callable[..., int], call: str, handle: int, param: int) -> str:
        raw = self._raw(function, f"{call}({param:#x})", handle, param)
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")

    def _raw(self, function: Callable[..., int], call: str, handle: int, param: int) -> bytes:
        size = ctypes.c_size_t(0)
        self._check(call, function(handle, param, 0, None, ctypes.byref(size)))
        buffer = ctypes.create_string_buffer(max(size.value, 1))
        self._check(call, function(handle, param, size.value, buffer, None))
        return buffer.raw[: size.value]

    @staticmethod
    def _check(call: str, status: int) -> None:
        if status != 0:
            raise IcdError(call, status)
