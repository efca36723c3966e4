"""Launches: the argument-size check, kernel parameters, dynamic shared memory from 48 KiB, a
barrier that must hold every thread of a block, and saxpy end to end."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PRELUDE, assert_results, driver_child

_LAUNCHES = (
    PRELUDE
    + r"""
from offload_cuda import CudaBackend
ol.olInit()
gpu = platform_devices()["cuda"][0]
out = {}
programs = {n: ol.olCreateProgram(gpu, image(n)) for n in ("multiargs", "foo", "noargs", "localmem", "saxpy", "sequence")}
k = {n: ol.olGetSymbol(p, n, ol.SymbolKind.KERNEL) for n, p in programs.items()}
mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 1 << 20)

# multiargs(char, int *, short): parameters at 0, 8 and 16 -> 18 bytes
out["short_multiargs"] = error_of(ol.olLaunchKernel, None, gpu, k["multiargs"], b"\0" * 17, launch())
out["exact_multiargs"] = error_of(ol.olLaunchKernel, None, gpu, k["multiargs"], b"\0" * 18, launch())
out["padded_multiargs"] = error_of(ol.olLaunchKernel, None, gpu, k["multiargs"], b"\0" * 24, launch())
out["no_args_for_foo"] = error_of(ol.olLaunchKernel, None, gpu, k["foo"], None, launch())
out["short_foo_queued"] = error_of(ol.olLaunchKernel, ol.olCreateQueue(gpu), gpu, k["foo"], b"\0" * 4, launch())
out["noargs_with_bytes"] = error_of(ol.olLaunchKernel, None, gpu, k["noargs"], b"\0" * 8, launch())

# the core refuses a short buffer before the backend is called (the one check, hookspecs' launch_kernel)
out["core_short"] = error_of(ol.olLaunchKernel, None, gpu, k["multiargs"], b"\0" * 10, launch())
backend = CudaBackend()
states = backend.init()
image_obj = backend.load_binary(states[0], image("multiargs"))
kern = backend.get_kernel(states[0], image_obj, "multiargs")
out["params"] = [list(p) for p in backend.kernel_params(states[0], kern)]
backend.unload_binary(states[0], image_obj)
for s in states:
    backend.deinit_device(s)

# 64 KiB of dynamic shared memory (above the 48 KiB default: the attribute is set first)
ctypes.memset(mem, 0, 1 << 16)
ol.olLaunchKernel(None, gpu, k["localmem"], struct.pack("P", mem), launch(2, 1024, 1 << 16))
out["localmem_64k"] = u32s(mem, 2048) == [(i % 1024) * 2 for i in range(2048)]
out["too_much_shared"] = error_of(ol.olLaunchKernel, None, gpu, k["localmem"], struct.pack("P", mem), launch(1, 64, 1 << 20))

# blocks of 256 threads exchanging through shared memory across __syncthreads
ctypes.memset(mem, 0, 4096)
ol.olLaunchKernel(None, gpu, k["localmem"], struct.pack("P", mem), ol.KernelLaunchSizeArgs(1, (3, 1, 1), (256, 1, 1), 1024))
out["barrier"] = u32s(mem, 768) == [(i % 256) * 2 for i in range(768)]

# saxpy over 100000 elements in blocks of 256
n = 100000
x = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 4 * n)
y = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 4 * n)
xs = (ctypes.c_float * n).from_address(x)
ys = (ctypes.c_float * n).from_address(y)
for i in range(n):
    xs[i] = i
    ys[i] = 1.0
q = ol.olCreateQueue(gpu)
ol.olLaunchKernel(q, gpu, k["saxpy"], struct.pack("fxxxxPPQ", 2.0, x, y, n), launch((n + 255) // 256, 256))
ol.olSyncQueue(q)
out["saxpy"] = all(ys[i] == 2.0 * i + 1.0 for i in range(0, n, 997)) and ys[n - 1] == 2.0 * (n - 1) + 1.0

# occupancy from the driver's occupancy API
out["occupancy"] = ol.olCalculateOptimalOccupancy(gpu, k["saxpy"], 0)
ol.olShutDown()
emit(out)
"""
)


@pytest.fixture(scope="module")
def launches(run_child: Any, child_env: Any, kernels: Any) -> dict[str, Any]:
    return run_child(_LAUNCHES, child_env(kernels=kernels)).result


def test_short_argument_buffer_is_refused_naming_both_sizes(launches: dict[str, Any]) -> None:
    code, details = launches["short_multiargs"]
    assert code == "INVALID_ARGUMENT" and "17" in details and "18" in details
    code, details = launches["short_foo_queued"]
    assert code == "INVALID_ARGUMENT" and "4" in details and "8" in details
    assert launches["no_args_for_foo"][0] == "INVALID_ARGUMENT"


def test_exact_and_padded_buffers_launch(launches: dict[str, Any]) -> None:
    assert launches["exact_multiargs"] is None
    assert launches["padded_multiargs"] is None  # a C struct with tail padding, as upstream
    assert launches["noargs_with_bytes"] is None


def test_the_core_refuses_short_buffers_for_the_backend(launches: dict[str, Any]) -> None:
    # the check is made once, by the core (issue 16): the backend no longer repeats it
    code, details = launches["core_short"]
    assert code == "INVALID_ARGUMENT" and "10" in details and "18 bytes" in details
    assert details.startswith("ArgumentsSize 10 is shorter"), details  # the core's own message


def test_kernel_params_from_the_driver(launches: dict[str, Any]) -> None:
    # the driver reports offsets and sizes only: no kinds, names or element types
    assert launches["params"] == [[0, 1, "bytes", "", None, False], [8, 8, "bytes", "", None, False], [16, 2, "bytes", "", None, False]]


def test_dynamic_shared_memory(launches: dict[str, Any]) -> None:
    assert launches["localmem_64k"] is True
    assert launches["too_much_shared"][0] == "OUT_OF_RESOURCES"


def test_barrier_holds_every_thread(launches: dict[str, Any]) -> None:
    assert launches["barrier"] is True


def test_saxpy_and_occupancy(launches: dict[str, Any]) -> None:
    assert launches["saxpy"] is True
    assert isinstance(launches["occupancy"], int) and launches["occupancy"] > 0


_RAW_LAUNCH = driver_child(
    r"""
setup()
mod = ck(d.cuModuleLoadData(image("multiargs")))
f = ck(d.cuModuleGetFunction(mod, b"multiargs"))
keep, short = extra_for(b"\0" * 17)
keep2, exact = extra_for(b"\0" * 18)
local = ck(d.cuModuleLoadData(image("localmem")))
lf = ck(d.cuModuleGetFunction(local, b"localmem"))
mem = ck(d.cuMemAlloc(4096))
keep3, ptr = extra_for(struct.pack("P", int(mem)))
emit({
    "short": name(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, 0, short)),
    "exact": name(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, 0, exact)),
    "shared_without_attribute": name(d.cuLaunchKernel(lf, 1, 1, 1, 64, 1, 1, 64 << 10, 0, 0, ptr)),
    "block_too_big": name(d.cuLaunchKernel(lf, 1, 1, 1, 2048, 1, 1, 0, 0, 0, ptr)),
})
"""
)


def test_simulated_driver_checks_launches(run_child: Any, child_env: Any, kernels: Any, simulated: Any) -> None:
    out = run_child(_RAW_LAUNCH, child_env(kernels=kernels)).result
    assert_results(out, CUDA_SUCCESS=["exact"], CUDA_ERROR_INVALID_VALUE=["short", "shared_without_attribute", "block_too_big"])
