"""The CUDA backend's native entry points (offload_native.h, ``offload_cuda._native``), called
directly through a ctypes mirror against the simulated driver, each run in a child process: the
GPU backends' shared scenario (tests/native_child.py: a queued launch that writes memory, copies
both ways, synchronize and has_pending_work, every case that defers having done nothing), then
CUDA's own: dynamic shared memory beyond the kernel's limit, a device fault in the wait; and a
bindings capsule with another signature leaving the backend on its Python hooks."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PRELUDE, offload_child
from native_child import FILLS, NATIVE_MIRROR, NATIVE_SCENARIO, check_fills, check_mismatch, check_scenario, mismatch_child

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
def native(run_child: Any, child_env: Any, kernels: Any, need_devices: Any) -> dict[str, Any]:
    need_devices(2)  # the scenario exchanges memory between two devices
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


_THROUGH_THE_CORE = offload_child(
    r"""
host = platform_devices()["host"][0]
q = ol.olCreateQueue(gpu)
kernel = ol.olGetSymbol(ol.olCreateProgram(gpu, image("foo")), "foo", ol.SymbolKind.KERNEL)
a, b = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256), ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
pinned = ol.olMemAlloc(gpu, ol.AllocType.HOST, 256)
back = (ctypes.c_uint32 * 64)()
size = launch()
for _ in range(3):  # the first checks the grid (Python), the others run in C
    ol.olLaunchKernel(q, gpu, kernel, struct.pack("P", a), size)
for _ in range(3):  # device to device: the first fills the range cache, the others run in C
    ol.olMemcpy(q, b, gpu, a, gpu, 256)
for _ in range(3):  # pinned host memory named by its device
    ol.olMemcpy(q, pinned, gpu, b, gpu, 256)
ol.olMemcpy(q, ctypes.addressof(back), host, pinned, gpu, 256)
ol.olSyncQueue(q)
counts = {name: getattr(getattr(ol, name), "counts", None) for name in ("olLaunchKernel", "olMemcpy")}
emit({"data": list(back), "launch": counts["olLaunchKernel"], "memcpy": counts["olMemcpy"]})
"""
)


def test_copies_between_memory_of_one_device_reach_the_native_exchange(run_child: Any, child_env: Any, kernels: Any) -> None:
    """Through the core's compiled path: a launch and device-to-device copies on one device (device
    memory, and pinned host memory named by its device) run from C to cuMemcpyDtoDAsync."""
    result = run_child(_THROUGH_THE_CORE, child_env(kernels=kernels)).result
    assert result["data"] == list(range(64))
    if result["memcpy"] is None:
        pytest.skip("the compiled core is not built here (OFFLOAD_COMPILED=0 or no C compiler)")
    assert result["launch"]["native"] >= 2, result["launch"]
    assert result["memcpy"]["native"] == 4, result["memcpy"]  # 6 exchanges: the first of each pair of ranges deferred


_FILLS = offload_child('host = platform_devices()["host"][0]\n' + FILLS)


def test_fills_reach_the_native_memset(run_child: Any, child_env: Any, kernels: Any) -> None:
    """Through the core's compiled path, a fill of a 1-byte pattern, or a 2- or 4-byte one at an
    address aligned to it, runs from C to cuMemsetD8/D16/D32Async (queued, and synchronously);
    any other pattern defers to the Python hook, with the same bytes either way."""
    check_fills(run_child(_FILLS, child_env(kernels=kernels)).result)
