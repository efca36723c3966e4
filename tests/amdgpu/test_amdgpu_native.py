"""The AMDGPU backend's native entry points (offload_native.h, ``offload_amdgpu._native``), called
directly through a ctypes mirror against the simulated HIP runtime (two devices), in a child
process: the GPU backends' shared scenario (tests/native_child.py: a queued launch that writes
memory, copies both ways and between buffers, synchronize and has_pending_work, the cases that
defer having done nothing); a bindings capsule with another signature leaving the backend on
its Python hooks; and fills through the core's compiled path reaching the native memset."""

from __future__ import annotations

from typing import Any

from native_child import FILLS, NATIVE_MIRROR, NATIVE_SCENARIO, check_fills, check_mismatch, check_scenario, mismatch_child

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


_FILLS = (
    r"""
import offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
gpu = next(d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU)
host = next(d for d in devs if d.platform.kind is ol.PlatformBackend.HOST)
"""
    + FILLS
)


def test_fills_reach_the_native_memset(hip_build: Any, hip_child: Any) -> None:
    """Through the core's compiled path, a fill of a 1-byte pattern, or a 2- or 4-byte one at an
    address aligned to it, runs from C to hipMemsetD8/D16/D32Async (queued, and synchronously);
    any other pattern defers to the Python hook, with the same bytes either way."""
    check_fills(hip_child(_FILLS, hip_build.env()))
