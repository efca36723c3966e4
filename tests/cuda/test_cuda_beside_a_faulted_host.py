"""A host kernel that faults leaves the other devices of the session working (issue 29): in one
process and one session, a host kernel stores through a wild pointer, its launch fails naming the
kernel, the host device refuses further work and its memory, and the process then finishes its
work on the simulated CUDA device (a kernel, fills and copies through plain host memory, checked
by data), shuts down cleanly and exits 0. Run on both paths, in a child process."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import PRELUDE
from helpers import WILD_KERNEL

_CHILD = (
    PRELUDE
    + f"WILD = {WILD_KERNEL!r}\n"
    + r"""
import offload_host
ol.olInit()
devices = platform_devices()
host, gpu = devices["host"][0], devices["cuda"][0]
out = {}
host_mem = ol.olMemAlloc(host, ol.AllocType.DEVICE, 64)
program = ol.olCreateProgram(host, offload_host.build_program(WILD, name="wild"))
wild = ol.olGetSymbol(program, "wild", ol.SymbolKind.KERNEL)
fault = error_of(ol.olLaunchKernel, None, host, wild, struct.pack("Q", 0x10), launch(4, 8))
out["fault"] = fault[0] if fault else None
out["names_kernel"] = bool(fault) and "host kernel 'wild' faulted" in fault[1]
out["host_alloc_after"] = (error_of(ol.olMemAlloc, host, ol.AllocType.DEVICE, 64) or [None])[0]
out["host_copy_after"] = (error_of(ol.olMemcpy, None, host_mem, host, host_mem + 32, host, 8) or [None])[0]

# the rest of the job, on the GPU: a kernel, a fill, copies through plain host memory
q = ol.olCreateQueue(gpu)
prog = ol.olCreateProgram(gpu, image("foo"))
foo = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
buf = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64 * 4)
ol.olLaunchKernel(q, gpu, foo, struct.pack("P", buf), launch(1, 64))
ol.olSyncQueue(q)
back = (ctypes.c_uint32 * 64)()
ol.olMemcpy(None, ctypes.addressof(back), host, buf, gpu, 64 * 4)
out["foo"] = list(back) == list(range(64))
ol.olMemFill(q, buf, b"\x07\x00\x00\x00", 64 * 4)
staged = (ctypes.c_uint32 * 64)(*range(100, 164))
other = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64 * 4)
ol.olMemcpy(q, other, gpu, ctypes.addressof(staged), host, 64 * 4)
ol.olSyncQueue(q)
ol.olMemcpy(None, ctypes.addressof(back), host, buf, gpu, 64 * 4)
out["fill"] = list(back) == [7] * 64
ol.olMemcpy(None, ctypes.addressof(back), host, other, gpu, 64 * 4)
out["copy"] = list(back) == list(range(100, 164))
for ptr in (buf, other, host_mem):
    ol.olMemFree(ptr)
ol.olDestroyQueue(q)
ol.olDestroyProgram(prog)
ol.olDestroyProgram(program)
out["shutdown"] = error_of(ol.olShutDown)
emit(out)
"""
)


@pytest.mark.parametrize("compiled", ["1", "0"], ids=["compiled", "python"])
def test_the_gpu_finishes_the_job_after_a_host_kernel_faulted(
    run_child: Any, child_env: Any, kernels: Any, compiled: str
) -> None:
    child = run_child(_CHILD, child_env(kernels=kernels, OFFLOAD_COMPILED=compiled, OFFLOAD_BACKENDS="host,cuda"))
    assert child.returncode == 0
    assert child.result == {
        "fault": "BACKEND_FAILURE",
        "names_kernel": True,
        "host_alloc_after": "BACKEND_FAILURE",
        "host_copy_after": "BACKEND_FAILURE",
        "foo": True,
        "fill": True,
        "copy": True,
        "shutdown": None,
    }, child.stderr[-3000:]
