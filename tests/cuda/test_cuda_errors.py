"""Every CUresult -> ErrorCode mapping, with the driver's error name and string in the details,
and driver failures provoked end to end through the ol* API."""

from __future__ import annotations

from typing import Any

import pytest

from offload import ErrorCode

from cuda_child import PRELUDE, offload_child

_cuda = pytest.importorskip("offload_cuda", reason="offload-cuda is not installed")
ERROR_CODES, error_code = _cuda.ERROR_CODES, _cuda.error_code

#: The mapping the issue asks for, spelled out independently of the backend's table.
EXPECTED = {
    "CUDA_ERROR_INVALID_VALUE": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_OUT_OF_MEMORY": ErrorCode.OUT_OF_RESOURCES,
    "CUDA_ERROR_NOT_INITIALIZED": ErrorCode.UNINITIALIZED,
    "CUDA_ERROR_DEINITIALIZED": ErrorCode.UNINITIALIZED,
    "CUDA_ERROR_NO_DEVICE": ErrorCode.INVALID_DEVICE,
    "CUDA_ERROR_INVALID_DEVICE": ErrorCode.INVALID_DEVICE,
    "CUDA_ERROR_INVALID_IMAGE": ErrorCode.INVALID_BINARY,
    "CUDA_ERROR_INVALID_CONTEXT": ErrorCode.BACKEND_FAILURE,
    "CUDA_ERROR_NO_BINARY_FOR_GPU": ErrorCode.INVALID_BINARY,
    "CUDA_ERROR_INVALID_PTX": ErrorCode.INVALID_BINARY,
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": ErrorCode.INVALID_BINARY,
    "CUDA_ERROR_INVALID_SOURCE": ErrorCode.INVALID_BINARY,
    "CUDA_ERROR_FILE_NOT_FOUND": ErrorCode.NOT_FOUND,
    "CUDA_ERROR_INVALID_HANDLE": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_NOT_FOUND": ErrorCode.NOT_FOUND,
    "CUDA_ERROR_NOT_READY": ErrorCode.BACKEND_FAILURE,
    "CUDA_ERROR_ILLEGAL_ADDRESS": ErrorCode.BACKEND_FAILURE,
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": ErrorCode.OUT_OF_RESOURCES,
    "CUDA_ERROR_LAUNCH_TIMEOUT": ErrorCode.BACKEND_FAILURE,
    "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_LAUNCH_FAILED": ErrorCode.BACKEND_FAILURE,
    "CUDA_ERROR_NOT_PERMITTED": ErrorCode.INVALID_ARGUMENT,
    "CUDA_ERROR_NOT_SUPPORTED": ErrorCode.UNSUPPORTED,
    "CUDA_ERROR_UNKNOWN": ErrorCode.UNKNOWN,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_cuda_error_maps(name: str) -> None:
    from cuda.bindings import driver  # importing loads no driver

    value = int(getattr(driver.CUresult, name))
    assert error_code(value) == EXPECTED[name]
    assert ERROR_CODES.get(value, ErrorCode.BACKEND_FAILURE) == EXPECTED[name]


def test_the_table_has_nothing_untested() -> None:
    from cuda.bindings import driver

    assert {int(getattr(driver.CUresult, n)) for n in EXPECTED} == set(ERROR_CODES)


def test_unlisted_results_are_backend_failures() -> None:
    assert error_code(46) == ErrorCode.BACKEND_FAILURE  # CUDA_ERROR_DEVICE_UNAVAILABLE


_DETAILS = (
    PRELUDE
    + r"""
from cuda.bindings import driver
from offload_cuda._errors import raise_for
out = {}
for name in NAMES:
    try:
        raise_for(driver, getattr(driver.CUresult, name), "cuSomething")
    except ol.OffloadError as exc:
        out[name] = [exc.code.name, exc.details, exc.result]
emit(out)
"""
)


def test_details_carry_the_drivers_name_and_string(run_child: Any, child_env: Any, simulated: Any) -> None:
    names = [
        "CUDA_ERROR_OUT_OF_MEMORY",
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "CUDA_ERROR_NOT_FOUND",
        "CUDA_ERROR_INVALID_VALUE",
    ]
    out = run_child(f"NAMES = {names!r}\n" + _DETAILS, child_env()).result
    for name in names:
        code, details, result = out[name]
        assert code == EXPECTED[name].name
        assert details.startswith(f"cuSomething: {name} (")
        assert details.split("): ", 1)[1], "the driver's error string is missing"


_PROVOKED = offload_child(
    r"""
out = {}
out["out_of_memory"] = error_of(ol.olMemAlloc, gpu, ol.AllocType.DEVICE, 8 << 20)
program = ol.olCreateProgram(gpu, image("foo"))
out["no_kernel"] = error_of(ol.olGetSymbol, program, "nope", ol.SymbolKind.KERNEL)
out["no_global"] = error_of(ol.olGetSymbol, program, "nope", ol.SymbolKind.GLOBAL_VARIABLE)
out["bad_image"] = error_of(ol.olCreateProgram, gpu, b"\x7fELF" + bytes(60))
def host_fn(_):
    raise RuntimeError("boom in a host function")
q = ol.olCreateQueue(gpu)
ol.olLaunchHostFunction(q, host_fn, None)
out["host_fn"] = error_of(ol.olSyncQueue, q)
out["after_host_fn"] = error_of(ol.olSyncQueue, q)
ol.olDestroyProgram(program)
ol.olShutDown()
emit(out)
"""
)


def test_provoked_driver_errors(run_child: Any, child_env: Any, kernels: Any, simulated: Any) -> None:
    out = run_child(_PROVOKED, child_env(kernels=kernels, GPUSIM_MEMORY_MIB="4")).result
    assert out["out_of_memory"][0] == "OUT_OF_RESOURCES" and "CUDA_ERROR_OUT_OF_MEMORY" in out["out_of_memory"][1]
    assert out["no_kernel"][0] == "NOT_FOUND" and "nope" in out["no_kernel"][1]
    assert "the program's kernels are 'foo'" in out["no_kernel"][1]  # the driver lists them (cuModuleEnumerateFunctions)
    assert out["no_global"][0] == "NOT_FOUND"
    assert out["bad_image"][0] == "INVALID_BINARY"
    assert out["host_fn"][0] == "UNKNOWN" and "boom in a host function" in out["host_fn"][1]
    assert out["after_host_fn"] is None, "an asynchronous error is reported once"
