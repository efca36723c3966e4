"""Programs (OpenCL C source, or SPIR-V where the device takes IL) and their kernels: the kernel's
argument info (``clGetKernelArgInfo``) gives the packed-struct layout (``KernelParam``s) and how
each parameter is handed to ``clSetKernelArg`` / ``clSetKernelArgSVMPointer``."""

from __future__ import annotations

import ctypes
import re
import threading
from typing import Any, NamedTuple

from offload import ErrorCode, KernelParam, OffloadError

from . import _cl as cl
from ._device import OpenCLDevice
from ._errors import driver

__all__ = ["OpenCLImage", "OpenCLKernel", "image_problem"]

_KERNEL = re.compile(r"\b(__)?kernel\b")
SPIRV_MAGIC = b"\x03\x02\x23\x07"  # 0x07230203, little-endian
BUILD_OPTIONS = ["-cl-kernel-arg-info"]
#: cl_kernel_arg_info (CL/cl.h): CL_KERNEL_ARG_ADDRESS_QUALIFIER, _TYPE_NAME, _TYPE_QUALIFIER, _NAME
_ARG_ADDRESS_QUALIFIER, _ARG_TYPE_NAME, _ARG_TYPE_QUALIFIER, _ARG_NAME = 0x1196, 0x1198, 0x1199, 0x119A
#: cl_kernel_arg_address_qualifier: CL_KERNEL_ARG_ADDRESS_GLOBAL, _LOCAL, _CONSTANT
_GLOBAL = {0x119B, 0x119D}
_LOCAL = 0x119C
_ARG_TYPE_CONST = 1 << 0  # CL_KERNEL_ARG_TYPE_CONST
#: OpenCL C scalar type -> (size, KernelParam kind, numpy element name)
_SCALARS: dict[str, tuple[int, str, str]] = {
    "char": (1, "int", "int8"), "uchar": (1, "uint", "uint8"), "short": (2, "int", "int16"),
    "ushort": (2, "uint", "uint16"), "int": (4, "int", "int32"), "uint": (4, "uint", "uint32"),
    "long": (8, "int", "int64"), "ulong": (8, "uint", "uint64"), "half": (2, "float", "float16"),
    "float": (4, "float", "float32"), "double": (8, "float", "float64"),
}
_VECTOR_LENGTHS = (2, 3, 4, 8, 16)


def image_problem(device: OpenCLDevice, data: bytes) -> str | None:
    """Why ``data`` is not a program image for ``device`` (None: it is one): SPIR-V where the
    device takes IL, else OpenCL C source (UTF-8 text without NUL bytes that declares a kernel)."""
    if data[:4] == SPIRV_MAGIC:
        return None if device.takes_il else f"{device.name} takes no SPIR-V (CL_DEVICE_IL_VERSION is empty)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"neither SPIR-V nor OpenCL C source (not UTF-8: {exc.reason} at byte {exc.start})"
    if "\0" in text.rstrip("\0"):
        return "neither SPIR-V nor OpenCL C source (a NUL byte inside the text)"
    return None if _KERNEL.search(text) else "neither SPIR-V nor OpenCL C source (no kernel function: no `kernel` keyword)"


class _Slot(NamedTuple):
    """How one OpenCL argument is set: from the packed buffer at ``offset`` (``size`` bytes, a
    pointer when ``pointer``), or (``offset`` -1) the launch's dynamic local memory."""

    arg_index: int
    offset: int
    size: int
    pointer: bool


def _param(kernel: cl.Kernel, name: str, index: int, offset: int) -> tuple[KernelParam | None, _Slot]:
    type_name = kernel.get_arg_info(index, _ARG_TYPE_NAME).strip()
    arg = kernel.get_arg_info(index, _ARG_NAME)
    space = kernel.get_arg_info(index, _ARG_ADDRESS_QUALIFIER)
    if type_name.endswith("*"):
        if space == _LOCAL:
            return None, _Slot(index, -1, 0, False)
        if space not in _GLOBAL:
            raise OffloadError(ErrorCode.UNSUPPORTED, f"kernel {name} parameter {arg}: a private pointer")
        element = _SCALARS.get(type_name[:-1].strip())
        const = bool(kernel.get_arg_info(index, _ARG_TYPE_QUALIFIER) & _ARG_TYPE_CONST)
        offset = -(-offset // 8) * 8
        return KernelParam(offset, 8, "pointer", arg, element[2] if element else None, const), _Slot(index, offset, 8, True)
    base = type_name.rstrip("0123456789")
    lanes = int(type_name[len(base):] or 1)
    if base not in _SCALARS or (lanes != 1 and lanes not in _VECTOR_LENGTHS):
        raise OffloadError(
            ErrorCode.UNSUPPORTED,
            f"kernel {name} parameter {arg}: type {type_name} cannot be passed in a packed struct (structs, images, samplers and pipes are not supported)",
        )
    scalar, kind, _ = _SCALARS[base]
    size = scalar * lanes
    align = scalar * (4 if lanes == 3 else lanes)  # OpenCL C: a vector of 3 is sized and aligned as 4
    size = align if lanes == 3 else size
    offset = -(-offset // align) * align
    return KernelParam(offset, size, kind if lanes == 1 else "bytes", arg), _Slot(index, offset, size, False)


class OpenCLKernel:
    """A kernel with its parameters (``params``) and argument slots; ``lock`` serialises setting
    its arguments and enqueuing it (OpenCL kernel objects are not thread-safe)."""

    def __init__(self, device: OpenCLDevice, program: cl.Program, name: str) -> None:
        self.name = name
        with driver(f"clCreateKernel of {name}"):
            self.kernel = cl.Kernel(program, name)
            params: list[KernelParam] = []
            slots: list[_Slot] = []
            offset = 0
            for index in range(self.kernel.num_args):
                param, slot = _param(self.kernel, name, index, offset)
                slots.append(slot)
                if param is not None:
                    params.append(param)
                    offset = param.offset + param.size
            self.work_group_size = int(self.kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device.device))
            self.local_mem = int(self.kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device.device))
            self.local_limit = int(device.device.local_mem_size)
        if sum(1 for s in slots if s.offset < 0) > 1:
            raise OffloadError(ErrorCode.UNSUPPORTED, f"kernel {name}: more than one local pointer parameter (only one takes the dynamic local memory)")
        self.params = tuple(params)
        self.slots = tuple(slots)
        self.lock = threading.Lock()
        self._last: tuple[bytes, int] | None = None  # the arguments set by the last launch

    def set_args(self, args: Any, dynamic_memory: int) -> None:
        """Set every argument from the packed buffer ``args`` (caller holds ``lock``). OpenCL
        keeps a kernel's arguments until they are set again: the same bytes and dynamic memory
        as the last launch set nothing."""
        view = memoryview(args).cast("B") if args is not None else memoryview(b"")
        key = (bytes(view), dynamic_memory)
        if key == self._last:
            return
        if dynamic_memory and self.local_mem + dynamic_memory > self.local_limit:
            # clEnqueueNDRangeKernel's CL_OUT_OF_RESOURCES ("insufficient resources such as ... local
            # memory"), which PoCL does not check: Debian's PoCL 3.1 aborts the process, 3.0 runs on
            raise OffloadError(
                ErrorCode.OUT_OF_RESOURCES,
                f"DynSharedMemory {dynamic_memory} and kernel {self.name}'s {self.local_mem} bytes of static local "
                f"memory exceed the device's LOCAL_MEM_SIZE {self.local_limit}",
            )
        self._last = None  # until every argument below is set
        for slot in self.slots:
            if slot.pointer:
                address = int.from_bytes(view[slot.offset : slot.offset + 8], "little")
                self.kernel.set_arg(slot.arg_index, cl.SVM((ctypes.c_char * 1).from_address(address)) if address else None)
            elif slot.offset < 0:
                self.kernel.set_arg(slot.arg_index, cl.LocalMemory(max(dynamic_memory, 1)))
            else:
                self.kernel.set_arg(slot.arg_index, view[slot.offset : slot.offset + slot.size])
        self._last = key


class OpenCLImage:
    """A built program; its kernels are made once per name (``kernel``)."""

    def __init__(self, device: OpenCLDevice, data: bytes) -> None:
        problem = image_problem(device, data)
        if problem is not None:
            raise OffloadError(ErrorCode.INVALID_BINARY, f"not a program for {device!r}: {problem}")
        try:
            if data[:4] == SPIRV_MAGIC:
                program = cl.Program(device.context, data)  # bytes: clCreateProgramWithIL
            else:
                program = cl.Program(device.context, data.decode("utf-8").rstrip("\0"))
            self.program = program.build(options=BUILD_OPTIONS, devices=[device.device])
        except cl.Error as exc:
            raise OffloadError(ErrorCode.INVALID_BINARY, f"the program does not build for {device!r}: {exc}") from exc
        self.kernels: dict[str, OpenCLKernel] = {}
        self.lock = threading.Lock()

    def kernel(self, device: OpenCLDevice, name: str) -> OpenCLKernel:
        with self.lock:
            found = self.kernels.get(name)
            if found is None:
                if name not in self.program.kernel_names.split(";"):
                    raise OffloadError(ErrorCode.NOT_FOUND, f"kernel {name} not found in the program")
                found = self.kernels[name] = OpenCLKernel(device, self.program, name)
            return found
