"""hipError_t -> ErrorCode: every member of hip-python's enum is mapped, and the details carry
HIP's own name and string (asked from the runtime: the simulator's here, Debian's real one in
test_amdgpu_real_hip.py)."""

from __future__ import annotations

import pytest
from hip import hip  # a dependency of offload-amdgpu; importing it loads no runtime

from helpers import ERROR_OF
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


@pytest.mark.parametrize("compiled", ["1", "0"], ids=["compiled", "python"])
def test_a_sticky_hip_error_faults_the_device_in_the_core(hip_runtime, hip_child, compiled) -> None:
    """hipErrorIllegalAddress (the simulator faults the device's third operation: GPUSIM_FAULT_AFTER)
    marks the device faulted in the core: its memory is refused by every copy and fill, quoting
    HIP's error, a queued copy on its queue too, and the host device works on."""
    result = hip_child(
        """
import ctypes
import offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
gpu = next(d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU)
host = next(d for d in devs if d.is_host)
""" + ERROR_OF + """
q = ol.olCreateQueue(gpu)
buf = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
staged, back = (ctypes.c_uint8 * 64)(*range(64)), (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, buf, gpu, ctypes.addressof(staged), host, 64)
ol.olMemcpy(None, ctypes.addressof(back), host, buf, gpu, 64)
out = {"before": list(back) == list(range(64)), "fault": error_of(ol.olMemFill, None, buf, b"\\x01", 64)}
out["copy_after"] = error_of(ol.olMemcpy, None, ctypes.addressof(back), host, buf, gpu, 8)
out["fill_after"] = error_of(ol.olMemFill, q, buf, b"\\x02", 64)
out["queued_host_copy_after"] = error_of(ol.olMemcpy, q, ctypes.addressof(back), host, ctypes.addressof(staged), host, 8)
h = ol.olMemAlloc(host, ol.AllocType.HOST, 64)
out["host_copy"] = error_of(ol.olMemcpy, None, h, host, ctypes.addressof(staged), host, 64)
ol.olMemFree(h)
out["shutdown"] = error_of(ol.olShutDown)  # (the faulted device's teardown may report the fault again)
emit(out)
""",
        {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_FAULT_AFTER": "3", "OFFLOAD_COMPILED": compiled, "OFFLOAD_BACKENDS": "host,amdgpu"},
    )
    assert result["before"] is True, result
    assert result["fault"][0] == "BACKEND_FAILURE" and "hipErrorIllegalAddress" in result["fault"][1], result
    for name in ("copy_after", "fill_after", "queued_host_copy_after"):
        assert result[name] is not None and result[name][0] == "BACKEND_FAILURE", (name, result)
        assert "faulted" in result[name][1] and "hipErrorIllegalAddress" in result[name][1], (name, result)
    assert result["host_copy"] is None, result
    assert result["shutdown"] is None or result["shutdown"][0] == "BACKEND_FAILURE", result
