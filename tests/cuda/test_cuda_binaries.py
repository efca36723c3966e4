"""Binary and architecture checks on real nvcc 13.0 output: sm_90 and sm_80 cubin, fatbin, PTX
(ISA 9.0, and a PTX claiming the newer ISA 9.5), and garbage."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import driver_child, offload_child

_CHECKS = offload_child(
    r"""
cubin = image("foo")
samples = {
    "sm90_cubin": cubin,
    "sm80_cubin": image("foo", "sm80.cubin"),
    "fatbin": image("foo", "fatbin"),
    "compressed_fatbin": image("foo", "compressed.fatbin"),
    "ptx": image("foo", "ptx"),
    "ptx_no_nul": image("foo", "ptx")[:-1],
    "ptx_9_5": image("foo", "ptx").replace(b".version 9.0", b".version 9.5"),
    "ptx_sm_100": image("foo", "ptx").replace(b".target sm_90", b".target sm_100"),
    "garbage": bytes(range(256)) * 4,
    "host_elf": Path(sys.executable).read_bytes()[:4096],
    "truncated_cubin": cubin[: len(cubin) // 2],
    "empty_text": b"hello\n",
}
out = {}
for name, data in samples.items():
    valid = ol.olIsValidBinary(gpu, data)
    try:
        program = ol.olCreateProgram(gpu, data)
    except ol.OffloadError as exc:
        out[name] = [valid, exc.code.name, exc.details]
        continue
    kernel = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
    mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 256)
    ol.olLaunchKernel(None, gpu, kernel, struct.pack("P", mem), launch())
    ran = u32s(mem, 64) == list(range(64))
    ol.olMemFree(mem)
    ol.olDestroyProgram(program)
    out[name] = [valid, "SUCCESS", ran]
ol.olShutDown()
emit(out)
"""
)


@pytest.fixture(scope="module")
def checks(run_child: Any, child_env: Any, kernels: Any) -> dict[str, list[Any]]:
    return run_child(_CHECKS, child_env(kernels=kernels)).result


@pytest.mark.parametrize("name", ["sm90_cubin", "fatbin", "ptx", "ptx_no_nul"])
def test_loadable_images_run(checks: dict[str, list[Any]], name: str) -> None:
    assert checks[name] == [True, "SUCCESS", True]


def test_sm80_cubin_is_not_for_an_sm90_device(checks: dict[str, list[Any]]) -> None:
    valid, code, details = checks["sm80_cubin"]
    assert (valid, code) == (False, "INVALID_BINARY")
    assert "sm_80" in details and "sm_90" in details


@pytest.mark.parametrize("name", ["garbage", "host_elf", "truncated_cubin", "empty_text", "ptx_sm_100"])
def test_other_bytes_are_invalid_binaries(checks: dict[str, list[Any]], name: str) -> None:
    valid, code, _ = checks[name]
    assert (valid, code) == (False, "INVALID_BINARY")


def test_compressed_fatbin_is_valid_but_not_modelled(checks: dict[str, list[Any]], simulator: Any, rehearsal: bool) -> None:
    """nvcc compresses larger fatbin entries by default (forced here): valid for the device (judged by the entry
    headers); the simulated driver does not decompress them (a documented limit), a real one
    loads and runs them."""
    valid, code, details = checks["compressed_fatbin"]
    assert valid is True
    if simulator is None and not rehearsal:
        assert code == "SUCCESS" and details is True
    else:
        assert code == "INVALID_BINARY" and "CUDA_ERROR_NO_BINARY_FOR_GPU" in details


def test_ptx_newer_than_the_driver_is_refused_by_the_driver(checks: dict[str, list[Any]], simulated: Any) -> None:
    """The 13.0 driver's JIT reads PTX ISA 9.0 at most (the PTX version trap): olIsValidBinary
    knows it from the driver's version (issue 15), and the error names both versions."""
    valid, code, details = checks["ptx_9_5"]
    assert valid is False and code == "INVALID_BINARY"
    assert "PTX ISA 9.5" in details and "9.0" in details


_RAW = driver_child(
    r"""
setup()
out = {}
for name, data in {"sm80": image("foo", "sm80.cubin"), "garbage": bytes(range(200)) + b"\0",
                   "ptx95": image("foo", "ptx").replace(b".version 9.0", b".version 9.5")}.items():
    result = d.cuModuleLoadData(data)
    out[name] = d.cuGetErrorName(result[0])[1].decode()
emit(out)
"""
)


def test_simulated_driver_refuses_on_its_own(run_child: Any, child_env: Any, kernels: Any, simulated: Any) -> None:
    """Bypassing the backend's checks, the driver itself refuses (it models the driver, not us)."""
    out = run_child(_RAW, child_env(kernels=kernels)).result
    assert out == {
        "sm80": "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "garbage": "CUDA_ERROR_INVALID_IMAGE",
        "ptx95": "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    }
