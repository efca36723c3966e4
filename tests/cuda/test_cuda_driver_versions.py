"""offload-cuda on drivers older than it or its cuda.bindings need: refused at init with
``OL_ERRC_UNSUPPORTED`` and a message naming the versions and the missing calls (shown by
``offload backends``), never an AttributeError or a crash; and served where the driver suffices.
Runs under whichever cuda-bindings major is installed (scripts/test.sh runs it under 13 and 12)."""

from __future__ import annotations

import importlib.metadata
import types
from typing import Any

import pytest

from cuda_child import PRELUDE
from offload import ErrorCode
from offload_cuda import _driver

pytestmark = pytest.mark.usefixtures("simulated")

BINDINGS = importlib.metadata.version("cuda-bindings")
MAJOR = _driver.bindings_major(BINDINGS)

_BACKENDS = "import runpy, sys; sys.argv = ['offload', 'backends']; runpy.run_module('offload', run_name='__main__')"

_INIT = (
    PRELUDE
    + r"""
import warnings
out = {}
try:
    ol.olInit()
    out["init"] = "SUCCESS"
    out["platforms"] = sorted(platform_devices())
    out["status"] = {s.name: [s.loaded, s.reason] for s in ol.backend_status()}
    ol.olShutDown()
except ol.OffloadError as exc:
    out["init"] = [exc.code.name, exc.details]
emit(out)
"""
)


@pytest.mark.parametrize(
    ("version", "bindings", "expected"),
    [
        (13000, "13.0.0", None),
        (13000, "12.9.1", None),
        (12040, "12.9.10", None),
        (13000, "12.8.0", "cuda.bindings 12.8.0 holds the GIL in blocking driver calls (cuStreamSynchronize)"),
        (13000, "12.9.0", "offload-cuda needs cuda-bindings 12.9.1 or newer"),
        (12090, "13.5.0", "cuda.bindings 13.5.0 needs a CUDA 13.0 driver (R580, 580.65.06 or newer); this driver is CUDA 12.9"),
        (12030, "12.9.4", "lacks cuFuncGetParamInfo (CUDA 12.4), cuModuleGetFunctionCount (CUDA 12.4), cuModuleEnumerateFunctions"),
        (12000, "12.9.1", "lacks cuMemPrefetchAsync_v2 (CUDA 12.2), cuFuncGetName (CUDA 12.3)"),
        (13000, "14.0.0", "cuda.bindings 14.0.0 is not a major this backend supports (12 or 13)"),
    ],
)
def test_version_problem(version: int, bindings: str, expected: str | None) -> None:
    problem = _driver.version_problem(version, bindings)
    assert problem == expected if expected is None else problem is not None and expected in problem


def test_adapt_speaks_bindings_13_names() -> None:
    """Under bindings 12 the CUDA 13 names lead to the ABI they have in 13; under 13 nothing changes."""
    from cuda.bindings import driver

    adapted = _driver.adapt(driver, BINDINGS)
    if MAJOR >= 13:
        assert adapted is driver
        return
    assert isinstance(adapted, types.ModuleType) and adapted is not driver
    assert adapted.cuMemPrefetchAsync is driver.cuMemPrefetchAsync_v2
    assert adapted.cuDeviceGetUuid is driver.cuDeviceGetUuid_v2
    assert adapted.cuCtxCreate is driver.cuCtxCreate_v4
    assert adapted.cuMemAlloc is driver.cuMemAlloc and driver.cuMemPrefetchAsync is not driver.cuMemPrefetchAsync_v2


def _refusal(version: int) -> str:
    problem = _driver.version_problem(version, BINDINGS)
    assert problem is not None
    return problem


@pytest.mark.parametrize("version", [12020, 12080] if MAJOR >= 13 else [12000, 12030])
def test_too_old_a_driver_is_refused_by_name(run_child: Any, child_env: Any, version: int) -> None:
    """olInit goes on without CUDA (the host serves; strict mode raises UNSUPPORTED), and
    ``offload backends`` says why, naming the driver's version and what it lacks."""
    expected = _refusal(version)
    out = run_child(_INIT, child_env(GPUSIM_CUDA_VERSION=str(version))).result
    assert out["init"] == "SUCCESS" and "cuda" not in out["platforms"] and "host" in out["platforms"]
    assert out["status"]["cuda"] == [False, f"OL_ERRC_{ErrorCode.UNSUPPORTED.name}: {expected}"]
    strict = run_child(_INIT, child_env(GPUSIM_CUDA_VERSION=str(version), OFFLOAD_BACKENDS_STRICT="1")).result
    assert strict["init"][0] == "UNSUPPORTED" and expected in strict["init"][1]
    listing = run_child(_BACKENDS, child_env(GPUSIM_CUDA_VERSION=str(version))).stdout
    assert f"cuda: skipped: OL_ERRC_UNSUPPORTED: {expected}" in listing.splitlines(), listing
    assert f"CUDA {_driver.version_text(version)}" in expected


_SERVES = (
    PRELUDE
    + r"""
ol.olInit()
gpu = platform_devices()["cuda"][0]
out = {"driver": ol.olGetDeviceInfo(gpu, ol.DeviceInfo.DRIVER_VERSION)}
src = ctypes.create_string_buffer(bytes(range(256)), 256)
back = ctypes.create_string_buffer(256)
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
queue = ol.olCreateQueue(gpu)
ol.olMemcpy(queue, mem, gpu, ctypes.addressof(src), platform_devices()["host"][0], 256)
ol.olMemcpy(queue, ctypes.addressof(back), platform_devices()["host"][0], mem, gpu, 256)
ol.olSyncQueue(queue)
out["copied"] = back.raw == src.raw
managed = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 4096)
ol.olMemPrefetch(queue, [managed], [4096], ol.MemMigrationFlag.HOST_TO_DEVICE)
ol.olMemPrefetch(queue, [managed], [4096], ol.MemMigrationFlag.DEVICE_TO_HOST)
ol.olSyncQueue(queue)
out["prefetched"] = True
ptx = image("foo", "ptx")
out["ptx_valid"] = ol.olIsValidBinary(gpu, ptx)
try:
    ol.olCreateProgram(gpu, ptx)
    out["ptx"] = "loaded"
except ol.OffloadError as exc:
    out["ptx"] = [exc.code.name, exc.details]
for address in (mem, managed):
    ol.olMemFree(address)
ol.olDestroyQueue(queue)
ol.olShutDown()
emit(out)
"""
)


def test_bindings_12_serve_a_12_8_driver(run_child: Any, child_env: Any, kernels: Any) -> None:
    """cuda.bindings 12 on a CUDA 12.8 (R570) driver: memory, copies and prefetch work; nvcc 13.0's
    PTX (ISA 9.0) is refused as the 12.8 JIT refuses it (it reads up to 8.7), before the driver sees it."""
    if MAJOR >= 13:
        pytest.skip(f"cuda-bindings {BINDINGS} need a CUDA 13.0 driver: refused on 12.8 (test_too_old_a_driver_is_refused_by_name)")
    out = run_child(_SERVES, child_env(kernels=kernels, GPUSIM_CUDA_VERSION="12080")).result
    assert out["copied"] and out["prefetched"]
    assert out["driver"] == "12.8"
    assert out["ptx_valid"] is False
    assert out["ptx"][0] == "INVALID_BINARY" and "PTX ISA 9.0" in out["ptx"][1] and "12.8" in out["ptx"][1]


def test_the_extras_name_the_binding_majors() -> None:
    """``offload-cuda[cu12]`` / ``[cu13]`` (cuda-core's names) pin the bindings' major; the
    installed bindings are one of them."""
    meta = importlib.metadata.metadata("offload-cuda")
    assert {"cu12", "cu13", "nvrtc", "nvrtc-cu12"} <= set(meta.get_all("Provides-Extra") or [])
    requires = [r.replace(" ", "") for r in meta.get_all("Requires-Dist") or []]
    for extra, major in (("cu12", "<13"), ("cu13", ">=13.0.2")):
        assert any(r.startswith("cuda-bindings") and f'extra=="{extra}"' in r and major in r for r in requires), requires
    assert MAJOR in (12, 13)
