"""CUresult -> ``offload.ErrorCode``: every driver failure becomes an ``OffloadError`` here.

The details name the driver call, the driver's error name and its error string, e.g.
``cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel image is available ...``.
"""

from __future__ import annotations

from typing import Any

from offload import ErrorCode
from offload.backend.support import DriverError, report_current_fault

__all__ = ["ERROR_CODES", "FAULTABLE", "STICKY", "CudaError", "error_code", "raise_for"]

#: CUresult values after which the context takes no more work: CUDA_ERROR_ILLEGAL_ADDRESS,
#: LAUNCH_TIMEOUT, ASSERT, HARDWARE_STACK_ERROR, ILLEGAL_INSTRUCTION, MISALIGNED_ADDRESS,
#: INVALID_ADDRESS_SPACE, INVALID_PC, LAUNCH_FAILED (Driver API, CUresult: "This leaves the process
#: in an inconsistent state and any further CUDA work will return the same error").
STICKY = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719})

#: The backend's devices by their primary context's address (``_backend`` keeps it): a sticky error
#: is reported (``report_device_fault``) for the device whose context is current where it surfaced.
FAULTABLE: dict[int, object] = {}

#: CUresult value -> ErrorCode; anything else is BACKEND_FAILURE.
ERROR_CODES: dict[int, ErrorCode] = {
    1: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_INVALID_VALUE
    2: ErrorCode.OUT_OF_RESOURCES,  # CUDA_ERROR_OUT_OF_MEMORY
    3: ErrorCode.UNINITIALIZED,  # CUDA_ERROR_NOT_INITIALIZED
    4: ErrorCode.UNINITIALIZED,  # CUDA_ERROR_DEINITIALIZED
    100: ErrorCode.INVALID_DEVICE,  # CUDA_ERROR_NO_DEVICE
    101: ErrorCode.INVALID_DEVICE,  # CUDA_ERROR_INVALID_DEVICE
    200: ErrorCode.INVALID_BINARY,  # CUDA_ERROR_INVALID_IMAGE
    201: ErrorCode.BACKEND_FAILURE,  # CUDA_ERROR_INVALID_CONTEXT
    209: ErrorCode.INVALID_BINARY,  # CUDA_ERROR_NO_BINARY_FOR_GPU
    218: ErrorCode.INVALID_BINARY,  # CUDA_ERROR_INVALID_PTX
    222: ErrorCode.INVALID_BINARY,  # CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    300: ErrorCode.INVALID_BINARY,  # CUDA_ERROR_INVALID_SOURCE
    301: ErrorCode.NOT_FOUND,  # CUDA_ERROR_FILE_NOT_FOUND
    400: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_INVALID_HANDLE
    500: ErrorCode.NOT_FOUND,  # CUDA_ERROR_NOT_FOUND
    600: ErrorCode.BACKEND_FAILURE,  # CUDA_ERROR_NOT_READY (never raised: callers ask for it)
    700: ErrorCode.BACKEND_FAILURE,  # CUDA_ERROR_ILLEGAL_ADDRESS
    701: ErrorCode.OUT_OF_RESOURCES,  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    702: ErrorCode.BACKEND_FAILURE,  # CUDA_ERROR_LAUNCH_TIMEOUT
    704: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    705: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    712: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    713: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
    719: ErrorCode.BACKEND_FAILURE,  # CUDA_ERROR_LAUNCH_FAILED
    800: ErrorCode.INVALID_ARGUMENT,  # CUDA_ERROR_NOT_PERMITTED
    801: ErrorCode.UNSUPPORTED,  # CUDA_ERROR_NOT_SUPPORTED
    999: ErrorCode.UNKNOWN,  # CUDA_ERROR_UNKNOWN
}


class CudaError(DriverError):
    """An ``OffloadError`` from a driver call; ``.result`` is the CUresult value."""


def error_code(result: int) -> ErrorCode:
    """The ``ErrorCode`` of a CUresult value."""
    return ERROR_CODES.get(int(result), ErrorCode.BACKEND_FAILURE)


def _describe(driver: Any, result: int) -> str:
    try:
        code = driver.CUresult(result)  # bindings 12 take the enum only (13 take an int too)
        err, name = driver.cuGetErrorName(code)
        err2, text = driver.cuGetErrorString(code)
    except Exception:  # the driver itself is unusable: keep the number
        return f"CUresult {int(result)}"
    name_s = name.decode() if err == 0 and name else f"CUresult {int(result)}"
    text_s = text.decode() if err2 == 0 and text else "no description"
    return f"{name_s} ({int(result)}): {text_s}"


def raise_for(driver: Any, result: Any, call: str) -> None:
    """Raise the ``OffloadError`` for a failed driver call (``result`` is not CUDA_SUCCESS); a sticky
    one first marks the current context's device faulted, so the core refuses its memory too."""
    value = int(result)
    error = CudaError(error_code(value), f"{call}: {_describe(driver, value)}", value)
    if value in STICKY and FAULTABLE:
        report_current_fault(error, FAULTABLE, driver.cuCtxGetCurrent)
    raise error
