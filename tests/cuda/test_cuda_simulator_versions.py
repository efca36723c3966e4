"""The simulated driver's reported version (``GPUSIM_CUDA_VERSION``), through ctypes and the real
cuda.bindings (no offload): a 12.x driver reports its version, lacks the entry points introduced
after it, answers an ABI newer than itself with its newest, and its JIT refuses newer PTX ISAs."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PROC_LOOKUP, RAW_PRELUDE

pytestmark = pytest.mark.usefixtures("simulated")

_TABLE = PROC_LOOKUP + r"""
version = ctypes.c_int()
lib.cuDriverGetVersion(ctypes.byref(version))
print(json.dumps({
    "version": version.value,
    "param_info": find("cuFuncGetParamInfo", 12040)[:2],
    "enumerate": find("cuModuleEnumerateFunctions", 12040)[:2],
    "prefetch": answers("cuMemPrefetchAsync", 12020),
    "elapsed_12080": answers("cuEventElapsedTime", 12080),
    "ctxsync_13000": answers("cuCtxSynchronize", 13000),
    "own_lookup_12000": answers("cuGetProcAddress", 12000),
}))
"""


def test_a_12_2_driver_lacks_the_later_entry_points(run_child: Any, child_env: Any) -> None:
    """CUDA 12.2 (R535): cuFuncGetParamInfo and cuModuleEnumerateFunctions (12.4) are unknown names
    (SYMBOL_NOT_FOUND), cuMemPrefetchAsync's CUmemLocation form (12.2) is there, and asked for the
    12.8 / 13.0 ABIs of cuEventElapsedTime / cuCtxSynchronize it answers with the ones it has."""
    out = run_child(_TABLE, child_env(GPUSIM_CUDA_VERSION="12020")).result
    assert out["version"] == 12020
    assert out["param_info"] == out["enumerate"] == [500, 1]  # CUDA_ERROR_NOT_FOUND, SYMBOL_NOT_FOUND
    assert [out["prefetch"], out["elapsed_12080"], out["ctxsync_13000"]] == ["cuMemPrefetchAsync_v2", "cuEventElapsedTime", "cuCtxSynchronize"]
    assert out["own_lookup_12000"] == "cuGetProcAddress_v2", "bindings 12 ask the driver for cuGetProcAddress at 12000 first"


def test_the_default_is_a_13_0_driver(run_child: Any, child_env: Any) -> None:
    out = run_child(_TABLE, child_env()).result
    assert out["version"] == 13000
    assert out["param_info"][:2] == out["enumerate"][:2] == [0, 0]
    assert out["ctxsync_13000"] == "cuCtxSynchronize_v2"


@pytest.mark.parametrize("value", ["11080", "13020", "12085", "twelve"])
def test_a_version_outside_the_model_is_refused_aloud(run_child: Any, child_env: Any, value: str) -> None:
    child = run_child(_TABLE, child_env(GPUSIM_CUDA_VERSION=value))
    assert child.result["version"] == 13000
    assert f"gpusim: ignoring GPUSIM_CUDA_VERSION={value}" in child.stderr


_BINDINGS = (
    RAW_PRELUDE
    + r"""
PTX = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
out = {"version": ck(d.cuDriverGetVersion())}
try:
    d.cuFuncGetParamInfo(d.CUfunction(0), 0)
    out["param_info"] = "called"
except RuntimeError as exc:  # the bindings' FunctionNotFoundError: the driver gave no entry
    out["param_info"] = str(exc)
dev, ctx = setup()
def load(isa):
    text = PTX.replace("9.0", isa).encode() + b"\0"
    log = bytearray(512)
    options = [d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    result, module = d.cuModuleLoadDataEx(text, 2, options, [log, len(log)])
    if not result:
        ck(d.cuModuleUnload(module))
    return [name(result), bytes(log).split(b"\0", 1)[0].decode()]
out["ptx_8_7"] = load("8.7")
out["ptx_9_0"] = load("9.0")
emit(out)
"""
)


def test_raw_bindings_on_a_12_8_driver(run_child: Any, child_env: Any) -> None:
    """Through cuda.bindings (either major): the version reported, a 12.4 call present, and the JIT
    of a 12.8 driver reading PTX ISA 8.7 but refusing nvcc 13.0's 9.0 (PTX ISA "Release Notes")."""
    out = run_child(_BINDINGS, child_env(GPUSIM_CUDA_VERSION="12080")).result
    assert out["version"] == 12080
    assert out["param_info"] == "called"
    assert out["ptx_8_7"] == ["CUDA_SUCCESS", ""]
    assert out["ptx_9_0"][0] == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert "Unsupported .version 9.0; current version is '8.7'" in out["ptx_9_0"][1]


def test_raw_bindings_on_a_12_2_driver_cannot_call_a_12_4_function(run_child: Any, child_env: Any) -> None:
    """What a backend that does not check the version first would meet: the bindings raise when the
    driver gave no entry for the call (offload-cuda refuses such a driver at init instead)."""
    out = run_child(_BINDINGS, child_env(GPUSIM_CUDA_VERSION="12020")).result
    assert out["version"] == 12020
    assert "cuFuncGetParamInfo" in out["param_info"] and "not found" in out["param_info"]
    assert out["ptx_8_7"][0] == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert "current version is '8.2'" in out["ptx_8_7"][1]

