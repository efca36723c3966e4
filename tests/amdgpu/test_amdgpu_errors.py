"""hipError_t -> ErrorCode: every member of hip-python's enum is mapped, and the details carry
HIP's own name and string (asked from the runtime: the simulator's here, Debian's real one in
test_amdgpu_real_hip.py)."""

from __future__ import annotations

import pytest
from hip import hip  # a dependency of offload-amdgpu; importing it loads no runtime

from offload import ErrorCode
from offload_amdgpu import HIP_ERROR_CODES, error_code

EXPECTED = {
    "hipErrorInvalidValue": ErrorCode.INVALID_ARGUMENT,
    "hipErrorOutOfMemory": ErrorCode.OUT_OF_RESOURCES,
    "hipErrorNotInitialized": ErrorCode.UNINITIALIZED,
    "hipErrorDeinitialized": ErrorCode.UNINITIALIZED,
    "hipErrorInvalidSymbol": ErrorCode.NOT_FOUND,
    "hipErrorNoDevice": ErrorCode.INVALID_DEVICE,
    "hipErrorInvalidDevice": ErrorCode.INVALID_DEVICE,
    "hipErrorInvalidImage": ErrorCode.INVALID_BINARY,
    "hipErrorNoBinaryForGpu": ErrorCode.INVALID_BINARY,
    "hipErrorInvalidKernelFile": ErrorCode.INVALID_BINARY,
    "hipErrorInvalidHandle": ErrorCode.INVALID_ARGUMENT,
    "hipErrorNotFound": ErrorCode.NOT_FOUND,
    "hipErrorSharedObjectSymbolNotFound": ErrorCode.NOT_FOUND,
    "hipErrorLaunchOutOfResources": ErrorCode.OUT_OF_RESOURCES,
    "hipErrorHostMemoryAlreadyRegistered": ErrorCode.INVALID_ARGUMENT,
    "hipErrorHostMemoryNotRegistered": ErrorCode.INVALID_ARGUMENT,
    "hipErrorPeerAccessUnsupported": ErrorCode.UNSUPPORTED,
    "hipErrorNotSupported": ErrorCode.UNSUPPORTED,
    "hipErrorLaunchFailure": ErrorCode.BACKEND_FAILURE,
    "hipErrorIllegalAddress": ErrorCode.BACKEND_FAILURE,
    "hipErrorUnknown": ErrorCode.UNKNOWN,
}


@pytest.mark.parametrize("member", [m for m in hip.hipError_t if m.value != 0], ids=lambda m: m.name)
def test_every_hip_error_is_mapped(member) -> None:
    assert member.value in HIP_ERROR_CODES, f"{member.name} ({member.value}) has no ErrorCode"
    code = error_code(member)
    assert code is not ErrorCode.SUCCESS
    if member.name in EXPECTED:
        assert code is EXPECTED[member.name]


def test_unknown_values_are_backend_failures() -> None:
    assert error_code(123456) is ErrorCode.BACKEND_FAILURE


def test_details_name_hips_error(hip_runtime, hip_child) -> None:
    """A failing HIP call raises OffloadError with the runtime's own name and string."""
    result = hip_child(
        """
import offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
dev = next(d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU)
out = {}
try:
    ol.olMemAlloc(dev, ol.AllocType.DEVICE, 1 << 40)
except ol.OffloadError as exc:
    out["oom"] = [exc.code.name, exc.details]
ol.olShutDown()
emit(out)
""",
        {"LD_LIBRARY_PATH": str(hip_runtime)},
    )
    code, details = result["oom"]
    assert code == "OUT_OF_RESOURCES"
    assert details == "hipMalloc failed: hipErrorOutOfMemory (2): out of memory"
