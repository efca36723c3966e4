"""Modules and kernels: one ``CudaImage`` per loaded module, one ``CudaKernel`` per function.

Global constructors and destructors follow the NVPTX convention upstream's CUDA plugin uses:
the kernels ``nvptx$device$init`` (launched, one thread, when the image is loaded) and
``nvptx$device$fini`` (launched before it is unloaded).
"""

from __future__ import annotations

import threading
from typing import Any

from offload import ErrorCode, KernelParam, OffloadError

from . import _binary
from ._device import CudaDevice
from ._driver import check
from ._errors import CudaError

__all__ = ["CudaImage", "CudaKernel"]

_CTOR = b"nvptx$device$init"
_DTOR = b"nvptx$device$fini"
_CUDA_ERROR_NOT_FOUND = 500
_CUDA_ERROR_INVALID_VALUE = 1
_ATTR_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


class CudaKernel:
    """A CUfunction, its parameters (``cuFuncGetParamInfo``) and its dynamic shared memory limit;
    ``native_record``: its record for the native entry points (None without them)."""

    __slots__ = ("function", "name", "params", "param_bytes", "dynamic_shared_limit", "lock", "native_record")

    def __init__(self, device: CudaDevice, function: Any, name: str) -> None:
        d = device.driver
        self.function = function
        self.name = name
        params: list[KernelParam] = []
        while True:
            result, offset, size = d.cuFuncGetParamInfo(function, len(params))
            if int(result) == _CUDA_ERROR_INVALID_VALUE:
                break  # past the last parameter
            if result:
                check(d, (result,), "cuFuncGetParamInfo")
            params.append(KernelParam(int(offset), int(size), "bytes", ""))
        self.params = tuple(params)
        self.param_bytes = max((p.offset + p.size for p in params), default=0)
        attr = d.CUfunction_attribute(_ATTR_MAX_DYNAMIC_SHARED)
        self.dynamic_shared_limit = int(check(d, d.cuFuncGetAttribute(attr, function), "cuFuncGetAttribute"))
        self.lock = threading.Lock()
        self.native_record: Any = None

    def allow_dynamic_shared(self, device: CudaDevice, size: int) -> None:
        """Raise the kernel's dynamic shared memory limit to ``size`` (needed from 48 KiB on)."""
        with self.lock:
            if size <= self.dynamic_shared_limit:
                return
            d = device.driver
            attr = d.CUfunction_attribute(_ATTR_MAX_DYNAMIC_SHARED)
            try:
                check(
                    d,
                    d.cuFuncSetAttribute(self.function, attr, size),
                    "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                )
            except CudaError as exc:
                raise OffloadError(
                    ErrorCode.OUT_OF_RESOURCES,
                    f"DynSharedMemory {size} exceeds what kernel {self.name} may use: {exc.details}",
                ) from exc
            self.dynamic_shared_limit = size
            if self.native_record is not None:  # the native launch defers above the limit it knows
                self.native_record.dyn_limit = size


_JIT_LOG_BYTES = 4096


def _load_module(d: Any, data: bytes) -> Any:
    """``cuModuleLoadDataEx`` with a JIT error log: a PTX image the driver refuses is reported
    with what its JIT compiler said."""
    log = bytearray(_JIT_LOG_BYTES)
    options = [d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    result, module = d.cuModuleLoadDataEx(data, 2, options, [log, len(log)])
    if int(result):
        said = bytes(log).split(b"\0", 1)[0].decode(errors="replace").strip()
        check(d, (result,), f"cuModuleLoadDataEx (JIT log: {said})" if said else "cuModuleLoadDataEx")
    return module


class CudaImage:
    """A loaded CUmodule (the image bytes kept alive with it) and its kernels by name."""

    __slots__ = ("module", "data", "kernels", "lock")

    def __init__(self, device: CudaDevice, data: bytes) -> None:
        why = _binary.problem(data, device.sm, device.driver_version)
        if why is not None:
            raise OffloadError(ErrorCode.INVALID_BINARY, f"cannot load on {device.name}: {why}")
        if _binary.image_format(data) == "ptx" and not data.endswith(b"\0"):
            data = data + b"\0"  # the driver reads PTX as a NUL-terminated string
        d = device.driver
        device.activate()
        self.data = data
        self.module = _load_module(d, data)
        self.kernels: dict[str, CudaKernel] = {}
        self.lock = threading.Lock()
        try:
            self._run_special(device, _CTOR)
        except BaseException:
            d.cuModuleUnload(self.module)
            raise

    def _run_special(self, device: CudaDevice, name: bytes) -> None:
        """Launch the constructor/destructor kernel ``name`` (one thread) if the image has it."""
        d = device.driver
        result, function = d.cuModuleGetFunction(self.module, name)
        if int(result) == _CUDA_ERROR_NOT_FOUND:
            return
        check(d, (result, function), "cuModuleGetFunction")
        stream = d.CUstream(0)
        check(d, d.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, 0, 0), f"cuLaunchKernel({name.decode()})")
        check(d, d.cuStreamSynchronize(stream), f"cuStreamSynchronize({name.decode()})")

    def kernel(self, device: CudaDevice, name: str) -> CudaKernel:
        with self.lock:
            found = self.kernels.get(name)
            if found is not None:
                return found
            d = device.driver
            device.activate()
            result, function = d.cuModuleGetFunction(self.module, name.encode())
            if int(result) == _CUDA_ERROR_NOT_FOUND:
                raise OffloadError(ErrorCode.NOT_FOUND, f"no kernel named {name!r} in the program")
            check(d, (result, function), "cuModuleGetFunction")
            found = self.kernels[name] = CudaKernel(device, function, name)
            return found

    def kernel_names(self, device: CudaDevice) -> list[str]:
        """The module's kernels (``cuModuleGetFunctionCount``, ``cuModuleEnumerateFunctions``,
        ``cuFuncGetName``), the constructor and destructor kernels aside."""
        d = device.driver
        device.activate()
        count = int(check(d, d.cuModuleGetFunctionCount(self.module), "cuModuleGetFunctionCount"))
        functions = check(d, d.cuModuleEnumerateFunctions(count, self.module), "cuModuleEnumerateFunctions") if count else []
        names = []
        for function in functions:
            name = check(d, d.cuFuncGetName(function), "cuFuncGetName")
            name = name if isinstance(name, bytes) else bytes(name)
            if name not in (_CTOR, _DTOR):
                names.append(name.decode())
        return names

    def global_variable(self, device: CudaDevice, name: str) -> tuple[int, int]:
        d = device.driver
        device.activate()
        result, address, size = d.cuModuleGetGlobal(self.module, name.encode())
        if int(result) == _CUDA_ERROR_NOT_FOUND:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no global variable named {name!r} in the program")
        check(d, (result,), "cuModuleGetGlobal")
        return int(address), int(size)

    def unload(self, device: CudaDevice) -> None:
        """Run the destructors, then unload exactly this module."""
        d = device.driver
        device.activate()
        try:
            self._run_special(device, _DTOR)
        finally:
            check(d, d.cuModuleUnload(self.module), "cuModuleUnload")
