"""hipError_t -> ``offload.ErrorCode``: every HIP failure becomes an ``OffloadError`` (a
``HipError``) here.

Mapped by number (the hip-python lines disagree on which members their enum has). The details
carry the call, HIP's own error name and string (asked from the runtime), and the number, e.g.
``hipMalloc failed: hipErrorOutOfMemory (2): out of memory``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from offload import ErrorCode
from offload.backend.support import DriverError, report_current_fault

__all__ = [
    "ERROR_CODES", "FAULTABLE", "HIP_ERROR_CODES", "STICKY", "HipError", "error_code", "hip_error_text", "raise_for",
    "raise_hip_error",
]  # fmt: skip

#: hipError_t values after which the device takes no more work (as CUDA's of the same numbers:
#: hipErrorIllegalAddress, hipErrorLaunchTimeOut, hipErrorAssert, hipErrorLaunchFailure).
STICKY = frozenset({700, 702, 710, 719})

#: The backend's devices by ordinal (``_backend`` keeps it): a sticky error is reported
#: (``report_device_fault``) for the calling thread's current device (``hipGetDevice``; the only
#: one where there is one).
FAULTABLE: dict[int, object] = {}

_E = ErrorCode

#: Every hipError_t of HIP 5.2 to 7.x; a value not listed here is ``BACKEND_FAILURE``.
ERROR_CODES: Mapping[int, ErrorCode] = {
    1: _E.INVALID_ARGUMENT,  # hipErrorInvalidValue
    2: _E.OUT_OF_RESOURCES,  # hipErrorOutOfMemory
    3: _E.UNINITIALIZED,  # hipErrorNotInitialized
    4: _E.UNINITIALIZED,  # hipErrorDeinitialized
    5: _E.BACKEND_FAILURE,  # hipErrorProfilerDisabled
    6: _E.BACKEND_FAILURE,  # hipErrorProfilerNotInitialized
    7: _E.BACKEND_FAILURE,  # hipErrorProfilerAlreadyStarted
    8: _E.BACKEND_FAILURE,  # hipErrorProfilerAlreadyStopped
    9: _E.INVALID_ARGUMENT,  # hipErrorInvalidConfiguration
    12: _E.INVALID_ARGUMENT,  # hipErrorInvalidPitchValue
    13: _E.NOT_FOUND,  # hipErrorInvalidSymbol
    17: _E.INVALID_ARGUMENT,  # hipErrorInvalidDevicePointer
    21: _E.INVALID_ARGUMENT,  # hipErrorInvalidMemcpyDirection
    35: _E.BACKEND_FAILURE,  # hipErrorInsufficientDriver
    52: _E.INVALID_ARGUMENT,  # hipErrorMissingConfiguration
    53: _E.BACKEND_FAILURE,  # hipErrorPriorLaunchFailure
    98: _E.INVALID_ARGUMENT,  # hipErrorInvalidDeviceFunction
    100: _E.INVALID_DEVICE,  # hipErrorNoDevice
    101: _E.INVALID_DEVICE,  # hipErrorInvalidDevice
    200: _E.INVALID_BINARY,  # hipErrorInvalidImage
    201: _E.BACKEND_FAILURE,  # hipErrorInvalidContext
    202: _E.BACKEND_FAILURE,  # hipErrorContextAlreadyCurrent
    205: _E.OUT_OF_RESOURCES,  # hipErrorMapFailed
    206: _E.BACKEND_FAILURE,  # hipErrorUnmapFailed
    207: _E.INVALID_ARGUMENT,  # hipErrorArrayIsMapped
    208: _E.INVALID_ARGUMENT,  # hipErrorAlreadyMapped
    209: _E.INVALID_BINARY,  # hipErrorNoBinaryForGpu
    210: _E.INVALID_ARGUMENT,  # hipErrorAlreadyAcquired
    211: _E.INVALID_ARGUMENT,  # hipErrorNotMapped
    212: _E.INVALID_ARGUMENT,  # hipErrorNotMappedAsArray
    213: _E.INVALID_ARGUMENT,  # hipErrorNotMappedAsPointer
    214: _E.BACKEND_FAILURE,  # hipErrorECCNotCorrectable
    215: _E.UNSUPPORTED,  # hipErrorUnsupportedLimit
    216: _E.BACKEND_FAILURE,  # hipErrorContextAlreadyInUse
    217: _E.UNSUPPORTED,  # hipErrorPeerAccessUnsupported
    218: _E.INVALID_BINARY,  # hipErrorInvalidKernelFile
    219: _E.BACKEND_FAILURE,  # hipErrorInvalidGraphicsContext
    300: _E.INVALID_BINARY,  # hipErrorInvalidSource
    301: _E.NOT_FOUND,  # hipErrorFileNotFound
    302: _E.NOT_FOUND,  # hipErrorSharedObjectSymbolNotFound
    303: _E.INVALID_BINARY,  # hipErrorSharedObjectInitFailed
    304: _E.BACKEND_FAILURE,  # hipErrorOperatingSystem
    400: _E.INVALID_ARGUMENT,  # hipErrorInvalidHandle (hipErrorInvalidResourceHandle)
    401: _E.BACKEND_FAILURE,  # hipErrorIllegalState
    500: _E.NOT_FOUND,  # hipErrorNotFound
    600: _E.BACKEND_FAILURE,  # hipErrorNotReady (queries treat it as "pending", never raised)
    700: _E.BACKEND_FAILURE,  # hipErrorIllegalAddress
    701: _E.OUT_OF_RESOURCES,  # hipErrorLaunchOutOfResources
    702: _E.BACKEND_FAILURE,  # hipErrorLaunchTimeOut
    704: _E.INVALID_ARGUMENT,  # hipErrorPeerAccessAlreadyEnabled
    705: _E.INVALID_ARGUMENT,  # hipErrorPeerAccessNotEnabled
    708: _E.INVALID_ARGUMENT,  # hipErrorSetOnActiveProcess
    709: _E.BACKEND_FAILURE,  # hipErrorContextIsDestroyed
    710: _E.BACKEND_FAILURE,  # hipErrorAssert
    712: _E.INVALID_ARGUMENT,  # hipErrorHostMemoryAlreadyRegistered
    713: _E.INVALID_ARGUMENT,  # hipErrorHostMemoryNotRegistered
    719: _E.BACKEND_FAILURE,  # hipErrorLaunchFailure
    720: _E.OUT_OF_RESOURCES,  # hipErrorCooperativeLaunchTooLarge
    801: _E.UNSUPPORTED,  # hipErrorNotSupported
    900: _E.UNSUPPORTED,  # hipErrorStreamCaptureUnsupported
    901: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureInvalidated
    902: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureMerge
    903: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureUnmatched
    904: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureUnjoined
    905: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureIsolation
    906: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureImplicit
    907: _E.BACKEND_FAILURE,  # hipErrorCapturedEvent
    908: _E.BACKEND_FAILURE,  # hipErrorStreamCaptureWrongThread
    910: _E.BACKEND_FAILURE,  # hipErrorGraphExecUpdateFailure
    911: _E.INVALID_ARGUMENT,  # hipErrorInvalidChannelDescriptor
    912: _E.INVALID_ARGUMENT,  # hipErrorInvalidTexture
    914: _E.INVALID_ARGUMENT,  # hipErrorInvalidResourceType
    915: _E.INVALID_ARGUMENT,  # hipErrorInvalidResourceConfiguration
    916: _E.INVALID_ARGUMENT,  # hipErrorStreamDetached
    999: _E.UNKNOWN,  # hipErrorUnknown
    1052: _E.OUT_OF_RESOURCES,  # hipErrorRuntimeMemory
    1053: _E.BACKEND_FAILURE,  # hipErrorRuntimeOther
    1054: _E.INVALID_ARGUMENT,  # hipErrorInvalidClusterSize
    1055: _E.UNKNOWN,  # hipErrorTbd
}


HIP_ERROR_CODES = ERROR_CODES  # its earlier name, kept for callers (ERROR_CODES, as in offload_cuda)


class HipError(DriverError):
    """An ``OffloadError`` from a HIP call; ``.result`` is the hipError_t value."""


def error_code(status: int) -> ErrorCode:
    """The ``ErrorCode`` for a (non-zero) hipError_t value."""
    return ERROR_CODES.get(int(status), ErrorCode.BACKEND_FAILURE)


def _text(result: Any) -> str:
    """hip-python returns a str/bytes, or a tuple ending in one, depending on its version."""
    if isinstance(result, tuple):
        result = result[-1]
    if isinstance(result, bytes):
        return result.decode("utf-8", "replace")
    return str(result)


def hip_error_text(hip: Any, status: Any) -> str:
    """``hipErrorNoDevice (100): <the runtime's hipGetErrorString>``, as the runtime names it."""
    value = int(status)
    try:
        if not isinstance(status, hip.hipError_t):
            status = hip.hipError_t(value)
        name = _text(hip.hipGetErrorName(status))
        text = _text(hip.hipGetErrorString(status))
    except Exception:  # a runtime too broken to name its own error still gets reported
        name, text = getattr(status, "name", f"hipError_t({value})"), "(the runtime gave no description)"
    return f"{name} ({value}): {text}"


def raise_for(hip: Any, status: Any, call: str) -> NoReturn:
    """Raise the ``HipError`` for ``call`` failing with ``status`` (not hipSuccess): HIP's name and
    string in the details."""
    value = int(status)
    error = HipError(error_code(value), f"{call} failed: {hip_error_text(hip, status)}", value)
    if value in STICKY and FAULTABLE:  # (one device is the current one; hipGetDevice may itself answer the fault)
        current = (lambda: (0, *FAULTABLE)) if len(FAULTABLE) == 1 else hip.hipGetDevice
        report_current_fault(error, FAULTABLE, current)
    raise error


def raise_hip_error(hip: Any, call: str, status: Any) -> NoReturn:
    """``raise_for`` under its earlier name and argument order, kept for callers."""
    raise_for(hip, status, call)
