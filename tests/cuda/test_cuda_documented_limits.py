"""The CUDA backend on GPUs as the driver documents them (issue 29, part 5), on the simulator's rules
(test_cuda_simulator_capability_rules.py shows each with raw calls); the tests without a simulator
knob run on a real driver too (OFFLOAD_CUDA_REAL=1):

- occupancy before any launch: a kernel asking for more dynamic shared memory than its current
  limit (48 KiB until raised) fits zero blocks, so ``olGetKernelMaxCooperativeGroupCount`` and
  ``olCalculateOptimalOccupancy`` must raise the limit first, as a launch does;
- ``olMemPrefetch`` on a GPU without concurrent managed access (Windows/WSL, older GPUs) is a hint
  ignored, not the driver's INVALID_DEVICE;
- COOPERATIVE_LAUNCH_SUPPORT is the driver's attribute; without it a cooperative launch and the
  group count are UNSUPPORTED, naming the attribute.
"""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import offload_child

_OCCUPANCY = offload_child(
    r"""
KIB64 = 64 * 1024
def fresh():
    program = ol.olCreateProgram(gpu, image("localmem"))
    return program, ol.olGetSymbol(program, "localmem", ol.SymbolKind.KERNEL)

def queries(k):
    return [ol.olGetKernelMaxCooperativeGroupCount(gpu, k, launch(1, 64, KIB64)),
            ol.olCalculateOptimalOccupancy(gpu, k, KIB64)]

mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 64 * 4)
out = {}
program, k = fresh()
out["fresh"] = queries(k)
ol.olDestroyProgram(program)
program, k = fresh()
ctypes.memset(mem, 0, 64 * 4)
out["cooperative_first"] = error_of(ol.olLaunchKernel, None, gpu, k, struct.pack("P", mem), launch(1, 64, KIB64),
                                    {ol.KernelLaunchPropType.IS_COOPERATIVE: True})
out["cooperative_data"] = u32s(mem, 64) == [i * 2 for i in range(64)]
ol.olDestroyProgram(program)
program, k = fresh()
ol.olLaunchKernel(None, gpu, k, struct.pack("P", mem), launch(1, 64, KIB64))
out["after_a_launch"] = queries(k)
out["too_much"] = [error_of(ol.olGetKernelMaxCooperativeGroupCount, gpu, k, launch(1, 64, 1 << 20)),
                   error_of(ol.olCalculateOptimalOccupancy, gpu, k, 1 << 20)]
ol.olDestroyProgram(program)
ol.olMemFree(mem)
ol.olShutDown()
emit(out)
"""
)


def test_occupancy_queries_before_any_launch_raise_the_dynamic_shared_limit(
    run_child: Any, child_env: Any, kernels: Any
) -> None:
    """A fresh program with 64 KiB of dynamic shared memory: the cooperative group count and the
    optimal group size are what they are after a plain launch (not 0 / OUT_OF_RESOURCES), a
    cooperative launch of one group runs, and 1 MiB (more than the device gives) is OUT_OF_RESOURCES."""
    out = run_child(_OCCUPANCY, child_env(kernels=kernels)).result
    groups, group_size = out["fresh"]
    assert groups >= 1 and group_size >= 32, out
    assert out["fresh"] == out["after_a_launch"]
    assert out["cooperative_first"] is None and out["cooperative_data"] is True
    for error in out["too_much"]:
        assert error[0] == "OUT_OF_RESOURCES" and str(1 << 20) in error[1], error


_PREFETCH = offload_child(
    r"""
q = ol.olCreateQueue(gpu)
managed = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 4096)
ctypes.memset(managed, 7, 4096)
out = {"to_device": error_of(ol.olMemPrefetch, q, [managed], [4096], ol.MemMigrationFlag.HOST_TO_DEVICE),
       "to_host": error_of(ol.olMemPrefetch, q, [managed], [4096], ol.MemMigrationFlag.DEVICE_TO_HOST)}
out["sync"] = error_of(ol.olSyncQueue, q)
out["data"] = ctypes.string_at(managed, 4096) == b"\x07" * 4096
ol.olDestroyQueue(q); ol.olMemFree(managed)
ol.olShutDown()
emit(out)
"""
)


@pytest.mark.parametrize("concurrent", ["1", "0"])
def test_prefetch_is_a_hint_ignored_without_concurrent_managed_access(
    run_child: Any, child_env: Any, concurrent: str, request: pytest.FixtureRequest
) -> None:
    """olMemPrefetch is a hint a device may ignore: on a GPU whose CONCURRENT_MANAGED_ACCESS is 0
    (GPUSIM_CUDA_MANAGED_CONCURRENT=0; the driver refuses every prefetch there) it succeeds without
    a driver call; where the GPU has it, the prefetch reaches the driver and succeeds too."""
    if concurrent == "0":
        request.getfixturevalue("simulated")  # the knob is the simulator's
    out = run_child(_PREFETCH, child_env(GPUSIM_CUDA_MANAGED_CONCURRENT=concurrent)).result
    assert out == {"to_device": None, "to_host": None, "sync": None, "data": True}


_COOPERATIVE = offload_child(
    r"""
program = ol.olCreateProgram(gpu, image("foo"))
k = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 64 * 4)
q = ol.olCreateQueue(gpu)
props = {ol.KernelLaunchPropType.IS_COOPERATIVE: True}
out = {"support": ol.olGetDeviceInfo(gpu, ol.DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT),
       "count": error_of(ol.olGetKernelMaxCooperativeGroupCount, gpu, k, launch()),
       "queued": error_of(ol.olLaunchKernel, q, gpu, k, struct.pack("P", mem), launch(), props),
       "sync": error_of(ol.olLaunchKernel, None, gpu, k, struct.pack("P", mem), launch(), props)}
out["queue"] = error_of(ol.olSyncQueue, q)
ctypes.memset(mem, 0, 64 * 4)
out["plain"] = error_of(ol.olLaunchKernel, None, gpu, k, struct.pack("P", mem), launch())
out["plain_data"] = u32s(mem, 64) == list(range(64))
ol.olDestroyQueue(q); ol.olMemFree(mem); ol.olDestroyProgram(program)
ol.olShutDown()
emit(out)
"""
)


@pytest.mark.usefixtures("simulated")
def test_cooperative_support_is_the_drivers_attribute(run_child: Any, child_env: Any, kernels: Any) -> None:
    """A GPU reporting CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 0 (GPUSIM_CUDA_COOPERATIVE=0):
    COOPERATIVE_LAUNCH_SUPPORT is False, the group count and cooperative launches (queued or not)
    are UNSUPPORTED naming the attribute, and plain launches run."""
    out = run_child(_COOPERATIVE, child_env(kernels=kernels, GPUSIM_CUDA_COOPERATIVE="0")).result
    assert out["support"] is False
    for what in ("count", "queued", "sync"):
        code, details = out[what]
        assert code == "UNSUPPORTED" and "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH" in details, (what, details)
    assert out["queue"] is None and out["plain"] is None and out["plain_data"] is True


def test_cooperative_support_where_the_driver_reports_it(run_child: Any, child_env: Any, kernels: Any) -> None:
    """The control: with the attribute (the simulator's default) support is True and every call runs."""
    out = run_child(_COOPERATIVE, child_env(kernels=kernels, GPUSIM_CUDA_COOPERATIVE="1")).result
    assert out["support"] is True and out["count"] is None
    assert out["queued"] is None and out["sync"] is None and out["queue"] is None and out["plain_data"] is True
