"""The AMDGPU backend's native entry points (offload_native.h, ``offload_amdgpu._native``), called
directly through a ctypes mirror against the simulated HIP runtime (two devices), in a child
process: the GPU backends' shared scenario (tests/native_child.py: a queued launch that writes
memory, copies both ways and between buffers, synchronize and has_pending_work, the cases that
defer having done nothing); a bindings capsule with another signature leaving the backend on
its Python hooks; and fills through the core's compiled path reaching the native memset."""

from __future__ import annotations

from typing import Any

import pytest

from native_child import NATIVE_MIRROR, NATIVE_SCENARIO, check_mismatch, check_scenario, mismatch_child

_PRELUDE = (
    NATIVE_MIRROR
    + r"""
import struct
from pathlib import Path
programs = Path(PROGRAMS)
"""
)

_ENTRY_POINTS = (
    r"""
from offload_amdgpu import AMDGPUBackend
backend = AMDGPUBackend()
gpu, other = backend.init()
foo_image = (programs / "foo.hsaco").read_bytes()
"""
    + NATIVE_SCENARIO
    + "emit(out)\n"
)


def test_entry_points_on_the_simulator(hip_build: Any, hip_child: Any) -> None:
    check_scenario(hip_child(f"PROGRAMS = {str(hip_build.programs)!r}\n" + _PRELUDE + _ENTRY_POINTS, hip_build.env(GPUSIM_DEVICES="2")))


_MISMATCH = (
    "from hip import hip\n"
    + mismatch_child("rocm.bindings.cyhip", "hipStreamQuery", "enum hipError_t (hipStream_t, int)", "offload_amdgpu", "AMDGPUBackend")
    + r"""
import offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
dev = next(d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU)
prog = ol.olCreateProgram(dev, (programs / "foo.hsaco").read_bytes())
mem = ol.olMemAlloc(dev, ol.AllocType.MANAGED, 256)
q = ol.olCreateQueue(dev)
ol.olLaunchKernel(q, dev, ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL), struct.pack("P", mem),
                  ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1), 0))
ol.olSyncQueue(q)
out["written"] = list((ctypes.c_uint32 * 64).from_address(mem)) == list(range(64))
ol.olShutDown()
emit(out)
"""
)


def test_a_signature_mismatch_leaves_the_python_hooks(hip_build: Any, hip_child: Any) -> None:
    result = hip_child(f"PROGRAMS = {str(hip_build.programs)!r}\n" + _PRELUDE + _MISMATCH, hip_build.env())
    check_mismatch(result, "hipStreamQuery", "enum hipError_t (hipStream_t, int)")


_FILLS = r"""
import ctypes
import offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
gpu = next(d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU)
host = next(d for d in devs if d.platform.kind is ol.PlatformBackend.HOST)
q = ol.olCreateQueue(gpu)
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
ol.olMemFill(q, mem, b"\x00", 64)  # the first: Python, which publishes the allocation's fill verdict
ol.olMemFill(q, mem, b"\x07", 16)  # hipMemsetD8Async
ol.olMemFill(q, mem + 16, b"\x01\x02", 16)  # hipMemsetD16Async
ol.olMemFill(q, mem + 32, b"\x01\x02\x03\xf4", 16)  # hipMemsetD32Async (a value over INT_MAX: HIP takes an int)
ol.olMemFill(q, mem + 49, b"\x05\x06", 12)  # a 2-byte pattern at an odd address: the hook's 2-D fill
ol.olMemFill(q, mem + 61, b"\x08", 3)
ol.olSyncQueue(q)  # a synchronous call is not ordered after a queue's work (its stream does not block): finish it first
ol.olMemFill(None, mem + 48, b"\x09", 1)  # synchronous: Python first (its verdict is keyed by no queue)
ol.olMemFill(None, mem + 48, b"\x0a", 1)  # then natively, waited for
ol.olSyncQueue(q)
back = (ctypes.c_uint8 * 64)()
ol.olMemcpy(None, ctypes.addressof(back), host, mem, gpu, 64)
ol.olShutDown()
emit({"data": list(back), "fill": getattr(ol.olMemFill, "counts", None)})
"""


def test_fills_reach_the_native_memset(hip_build: Any, hip_child: Any) -> None:
    """Through the core's compiled path, a fill of a 1-byte pattern, or a 2- or 4-byte one at an
    address aligned to it, runs from C to hipMemsetD8/D16/D32Async (queued, and synchronously);
    any other pattern defers to the Python hook, with the same bytes either way."""
    result = hip_child(_FILLS, hip_build.env())
    assert result["data"] == [7] * 16 + [1, 2] * 8 + [1, 2, 3, 0xF4] * 4 + [10] + [5, 6] * 6 + [8] * 3
    if result["fill"] is None:
        pytest.skip("the compiled core is not built here (OFFLOAD_COMPILED=0 or no C compiler)")
    assert result["fill"] == {"fast": 6, "deferred": 2, "native": 5}, result["fill"]
