"""OpenCL status codes as offload error codes: ``driver(what)`` turns a PyOpenCL error raised inside
it into an ``OffloadError`` naming the call, the OpenCL status and its meaning; ``status_error``
does the same for a status read through the ICD loader (``_icd``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from offload import ErrorCode, OffloadError

from . import _cl as cl

__all__ = ["ERROR_CODES", "driver", "status_error"]

#: OpenCL status (cl.h) -> ErrorCode; any other status is BACKEND_FAILURE.
ERROR_CODES: dict[int, ErrorCode] = {
    -1: ErrorCode.NOT_FOUND,  # CL_DEVICE_NOT_FOUND
    -4: ErrorCode.OUT_OF_RESOURCES,  # CL_MEM_OBJECT_ALLOCATION_FAILURE
    -5: ErrorCode.OUT_OF_RESOURCES,  # CL_OUT_OF_RESOURCES
    -6: ErrorCode.OUT_OF_RESOURCES,  # CL_OUT_OF_HOST_MEMORY
    -11: ErrorCode.INVALID_BINARY,  # CL_BUILD_PROGRAM_FAILURE
    -30: ErrorCode.INVALID_VALUE,  # CL_INVALID_VALUE
    -33: ErrorCode.INVALID_DEVICE,  # CL_INVALID_DEVICE
    -36: ErrorCode.INVALID_QUEUE,  # CL_INVALID_COMMAND_QUEUE
    -42: ErrorCode.INVALID_BINARY,  # CL_INVALID_BINARY
    -44: ErrorCode.INVALID_BINARY,  # CL_INVALID_PROGRAM
    -45: ErrorCode.INVALID_BINARY,  # CL_INVALID_PROGRAM_EXECUTABLE
    -46: ErrorCode.NOT_FOUND,  # CL_INVALID_KERNEL_NAME
    -49: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_ARG_INDEX
    -50: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_ARG_VALUE
    -51: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_ARG_SIZE
    -52: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_KERNEL_ARGS
    -54: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_WORK_GROUP_SIZE
    -55: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_WORK_ITEM_SIZE
    -58: ErrorCode.INVALID_EVENT,  # CL_INVALID_EVENT
    -63: ErrorCode.INVALID_ARGUMENT,  # CL_INVALID_GLOBAL_WORK_SIZE
}


def status_error(what: str, status: int | None) -> OffloadError:
    """The ``OffloadError`` for OpenCL status ``status`` (``ERROR_CODES``, else BACKEND_FAILURE)."""
    return OffloadError(ERROR_CODES.get(status, ErrorCode.BACKEND_FAILURE) if isinstance(status, int) else ErrorCode.BACKEND_FAILURE, what)


@contextlib.contextmanager
def driver(what: str) -> Iterator[None]:
    """Run the PyOpenCL calls of ``what`` ("clBuildProgram of kernel foo"): a ``pyopencl.Error``
    becomes ``OffloadError(ERROR_CODES[status], ...)`` with the error as its cause."""
    try:
        yield
    except cl.Error as exc:
        status = getattr(exc, "code", None)
        raise status_error(f"{what}: OpenCL status {status}: {exc}", status) from exc
