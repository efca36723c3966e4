"""A sticky CUDA error (a kernel touching unmapped memory: CUDA_ERROR_ILLEGAL_ADDRESS, after which
the context takes no more work) marks the device faulted in the core (``report_device_fault``):
its memory is refused by every copy and fill, on both paths, with an error quoting the driver's
(BACKEND_FAILURE), a queued copy on its queue is refused too, its queue is destroyed (parked for
the final olShutDown, which releases it), the host device of the same session keeps working, and a fresh olInit after the final olShutDown gets a working device (the primary
context's last release clears the fault). The simulator faults the device's Nth device operation
(``GPUSIM_FAULT_AFTER``, tests/simulators/README.md); run in a child process."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PRELUDE

_CHILD = (
    PRELUDE
    + r"""
ol.olInit()
devices = platform_devices()
host, gpu = devices["host"][0], devices["cuda"][0]
out = {}
q = ol.olCreateQueue(gpu)
buf = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
staged = (ctypes.c_uint8 * 64)(*range(64))
back = (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, buf, gpu, ctypes.addressof(staged), host, 64)  # device operation 1: a copy
ol.olMemcpy(None, ctypes.addressof(back), host, buf, gpu, 64)  # 2: the copy back
out["before"] = list(back) == list(range(64))
fault = error_of(ol.olMemFill, None, buf, b"\x01", 64)  # 3: faults (GPUSIM_FAULT_AFTER=3)
out["fault"] = fault
# the core refuses the faulted device's memory from now on, quoting the driver's error
out["copy_out_after"] = error_of(ol.olMemcpy, None, ctypes.addressof(back), host, buf, gpu, 8)
out["copy_in_after"] = error_of(ol.olMemcpy, None, buf, gpu, ctypes.addressof(staged), host, 8)
out["fill_after"] = error_of(ol.olMemFill, q, buf, b"\x02", 64)
# plain host memory on the faulted device's queue: refused by the core as well
out["queued_host_copy_after"] = error_of(ol.olMemcpy, q, ctypes.addressof(back), host, ctypes.addressof(staged), host, 8)
# the host device of the same session works on
h = ol.olMemAlloc(host, ol.AllocType.HOST, 64)
out["host_copy"] = error_of(ol.olMemcpy, None, h, host, ctypes.addressof(staged), host, 64)
ol.olMemFree(h)  # (host memory: no wait on the faulted device's queue, whose queries fail)
out["free_faulted"] = error_of(ol.olMemFree, buf)  # the driver's own refusal, as liboffload would return it
out["destroy_queue"] = error_of(ol.olDestroyQueue, q)
out["shutdown"] = error_of(ol.olShutDown)
emit(out)  # (what came before, should the rest fail)
ol.olInit()  # a fresh session: the primary context was released, the fault with it
gpu = platform_devices()["cuda"][0]
buf = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
ol.olMemcpy(None, buf, gpu, ctypes.addressof(staged), host := platform_devices()["host"][0], 64)
back = (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, ctypes.addressof(back), host, buf, gpu, 64)
out["fresh"] = list(back) == list(range(64))
ol.olMemFree(buf)
ol.olShutDown()
emit(out)
"""
)


@pytest.mark.parametrize("compiled", ["1", "0"], ids=["compiled", "python"])
def test_a_sticky_cuda_error_faults_the_device_in_the_core(
    simulated: Any, run_child: Any, child_env: Any, kernels: Any, compiled: str
) -> None:
    env = child_env(kernels=kernels, OFFLOAD_COMPILED=compiled, OFFLOAD_BACKENDS="host,cuda", GPUSIM_FAULT_AFTER="3")
    child = run_child(_CHILD, env)
    assert child.returncode == 0, child.stderr[-3000:]
    out = child.result
    assert out["before"] is True, out
    code, details = out["fault"]
    assert code == "BACKEND_FAILURE" and "CUDA_ERROR_ILLEGAL_ADDRESS" in details, out
    for name in ("copy_out_after", "copy_in_after", "fill_after", "queued_host_copy_after"):
        assert out[name] is not None and out[name][0] == "BACKEND_FAILURE", (name, out)
        assert "faulted" in out[name][1] and "CUDA_ERROR_ILLEGAL_ADDRESS" in out[name][1], (name, out)
    assert out["host_copy"] is None, out
    assert out["free_faulted"] is not None and out["free_faulted"][0] == "BACKEND_FAILURE", out
    assert out["destroy_queue"] is None, out  # parked: the final olShutDown releases it
    assert out["shutdown"] is None or out["shutdown"][0] == "BACKEND_FAILURE", out
    assert out["fresh"] is True, out
