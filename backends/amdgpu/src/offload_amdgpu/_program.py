"""Programs and kernels: one ``HipImage`` per loaded HIP module, one ``HipKernel`` per function.

A module belongs to the device it was loaded on (HIP aborts the process on a mismatch), so each
call here makes that device current first. Kernel parameters come from the code object's
metadata (``_code_object``), not from HIP.
"""

from __future__ import annotations

from typing import Any

from offload import ErrorCode, OffloadError

from . import _code_object
from ._code_object import CodeObject, KernelInfo
from ._device import HipDevice
from ._driver import check
from ._errors import raise_for

__all__ = ["HipImage", "HipKernel"]


class HipKernel:
    """A kernel function handle with its metadata (explicit arguments, limits); ``native_record``:
    its record for the native entry points (None without them)."""

    __slots__ = ("function", "info", "param_bytes", "native_record")

    def __init__(self, function: Any, info: KernelInfo) -> None:
        self.function = function
        self.info = info
        self.param_bytes = info.explicit_size  # the launch-buffer extent: the bytes a launch passes (launch_extent)
        self.native_record: Any = None

    def __repr__(self) -> str:
        return f"<HipKernel {self.info.name} args={self.param_bytes}B>"


class HipImage:
    """A loaded module and the code object it came from."""

    __slots__ = ("module", "code")

    def __init__(self, device: HipDevice, data: bytes) -> None:
        """Load the code object of ``data`` (a code object or an offload bundle) for ``device``."""
        try:
            code = _code_object.code_object_for(data, device.target)
        except ValueError as exc:
            raise OffloadError(
                ErrorCode.INVALID_BINARY, f"{_code_object.describe(data)} does not load on {device.target}: {exc}"
            ) from None
        hip = device.hip
        device.activate()
        self.module = check(hip, hip.hipModuleLoadData(code.data), "hipModuleLoadData")
        self.code: CodeObject = code

    def unload(self, device: HipDevice) -> None:
        hip = device.hip
        device.activate()
        check(hip, hip.hipModuleUnload(self.module), "hipModuleUnload")

    def kernel(self, device: HipDevice, name: str) -> HipKernel:
        info = self.code.kernels.get(name)
        if info is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no kernel {name!r} in the code object")
        hip = device.hip
        device.activate()
        function = check(hip, hip.hipModuleGetFunction(self.module, name.encode()), f"hipModuleGetFunction({name!r})")
        return HipKernel(function, info)

    def global_variable(self, device: HipDevice, name: str) -> tuple[int, int]:
        if name not in self.code.globals:
            raise OffloadError(ErrorCode.NOT_FOUND, f"no global variable {name!r} in the code object")
        hip = device.hip
        device.activate()
        result = hip.hipModuleGetGlobal(self.module, name.encode())
        if result[0]:
            raise_for(hip, result[0], f"hipModuleGetGlobal({name!r})")
        return int(result[1]), int(result[2])
