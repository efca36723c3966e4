"""The CUDA backend's native entry points (offload_native.h, ``offload_cuda._native``), called
directly through a ctypes mirror against the simulated driver, each run in a child process: the
GPU backends' shared scenario (tests/native_child.py: a queued launch that writes memory, copies
both ways, synchronize and has_pending_work, every case that defers having done nothing), then
CUDA's own: dynamic shared memory beyond the kernel's limit, a device fault in the wait; and a
bindings capsule with another signature leaving the backend on its Python hooks."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PRELUDE
from native_child import NATIVE_MIRROR, NATIVE_SCENARIO, check_mismatch, check_scenario, mismatch_child

_ENTRY_POINTS = (
    PRELUDE
    + NATIVE_MIRROR
    + r"""
from offload_cuda import CudaBackend
backend = CudaBackend()
gpu, other = backend.init()
foo_image = image("foo")
"""
    + NATIVE_SCENARIO
    + r"""
# above the kernel's dynamic shared memory limit: defers; the Python hook raises the kernel's
# limit, then the record's, and the native launch serves
localmem = backend.get_kernel(gpu, backend.load_binary(gpu, image("localmem")), "localmem")
out["too_much_shared"] = ep.launch_kernel(dev, qw, word(localmem), arg, 8, dims(1, 64, 1 << 16))
backend.launch_kernel(gpu, q, localmem, arg, ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1), 1 << 16))
out["shared_after_python"] = ep.launch_kernel(dev, qw, word(localmem), arg, 8, dims(1, 64, 1 << 16))
ep.synchronize(dev, qw)

# a device fault: the launch is queued, the wait fails and defers; the Python hook raises
fault = backend.get_kernel(gpu, backend.load_binary(gpu, image("fault")), "fault")
fault_args = struct.pack("PII", buf, 64, 0)
out["fault_launch"] = ep.launch_kernel(dev, qw, word(fault), fault_args, len(fault_args), dims())
out["fault_sync"] = ep.synchronize(dev, qw)
out["fault_python"] = error_of(backend.synchronize, gpu, q, False)
emit(out)
"""
)


@pytest.fixture(scope="module")
def native(run_child: Any, child_env: Any, kernels: Any) -> dict[str, Any]:
    return run_child(_ENTRY_POINTS, child_env(devices=2, kernels=kernels)).result


def test_the_shared_scenario(native: dict[str, Any]) -> None:
    check_scenario(native)


def test_dynamic_shared_memory_beyond_the_kernel_limit_defers(native: dict[str, Any]) -> None:
    assert native["too_much_shared"] == 1
    assert native["shared_after_python"] == 0  # the record follows the kernel's raised limit


def test_a_driver_error_in_the_wait_defers_to_the_python_hook(native: dict[str, Any]) -> None:
    assert native["fault_launch"] == 0 and native["fault_sync"] == 1
    code, details = native["fault_python"]
    assert code == "BACKEND_FAILURE" and "cuStreamSynchronize" in details


_MISMATCH = (
    PRELUDE
    + NATIVE_MIRROR
    + "import cuda.bindings.driver\n"
    + mismatch_child("cuda.bindings.cydriver", "cuStreamQuery", "CUresult (CUstream, int)", "offload_cuda", "CudaBackend")
    + r"""
# the backend serves through its Python hooks
ol.olInit()
gpu = platform_devices()["cuda"][0]
prog = ol.olCreateProgram(gpu, image("foo"))
mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 256)
q = ol.olCreateQueue(gpu)
ol.olLaunchKernel(q, gpu, ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL), struct.pack("P", mem), launch())
ol.olSyncQueue(q)
out["written"] = u32s(mem, 64) == list(range(64))
ol.olShutDown()
emit(out)
"""
)


def test_a_signature_mismatch_leaves_the_python_hooks(run_child: Any, child_env: Any, kernels: Any) -> None:
    result = run_child(_MISMATCH, child_env(kernels=kernels)).result
    check_mismatch(result, "cuStreamQuery", "CUresult (CUstream, int)")
