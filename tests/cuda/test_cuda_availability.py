"""No driver, a driver without devices, and two devices (cross-GPU copies)."""

from __future__ import annotations

import ctypes.util
from typing import Any

import pytest

from cuda_child import PRELUDE

_STATUS = (
    PRELUDE
    + r"""
from offload_cuda import CudaBackend
backend = CudaBackend()
direct = backend.init()
ol.olInit()
status = {s.name: [s.loaded, s.device_count, s.reason, s.note] for s in ol.backend_status()}
devices = platform_devices()
host = devices["host"][0]
address = ol.olMemAlloc(host, ol.AllocType.HOST, 64)
ol.olMemFree(address)
ol.olShutDown()
emit({"direct": len(direct), "reason": backend.unavailable_reason, "status": status,
      "cuda_devices": len(devices.get("cuda", []))})
"""
)


def _no_real_driver() -> None:
    if ctypes.util.find_library("cuda") is not None:
        pytest.skip("this machine has a libcuda: the no-driver path cannot be shown here")


def test_no_driver_loads_with_zero_devices(run_child: Any, child_env: Any) -> None:
    """The real cuda.bindings with no libcuda at all: zero devices, the reason kept, olInit fine."""
    _no_real_driver()
    env = {k: v for k, v in child_env().items() if k != "LD_LIBRARY_PATH"}
    env["OFFLOAD_BACKENDS_STRICT"] = "1"  # the CUDA backend must not fail olInit
    out = run_child(_STATUS, env).result
    assert out["direct"] == 0 and out["cuda_devices"] == 0
    assert "no CUDA driver" in out["reason"] and "cuda" in out["reason"].lower()
    assert out["status"]["cuda"][:2] == [True, 0]
    assert out["status"]["cuda"][3] == out["reason"]  # the note offload backends shows
    assert out["status"]["host"][0] is True


def test_driver_without_devices(run_child: Any, child_env: Any, simulated: Any) -> None:
    out = run_child(_STATUS, child_env(devices=0, OFFLOAD_BACKENDS_STRICT="1")).result
    assert out["cuda_devices"] == 0
    assert "CUDA_ERROR_NO_DEVICE" in out["reason"]
    assert out["status"]["cuda"][:2] == [True, 0]
    assert "CUDA_ERROR_NO_DEVICE" in out["status"]["cuda"][3]


def test_offload_backends_shows_why_cuda_has_no_device(run_child: Any, child_env: Any, simulated: Any) -> None:
    code = "import runpy, sys; sys.argv = ['offload', 'backends']; runpy.run_module('offload', run_name='__main__')"
    out = run_child(code, child_env(devices=0)).stdout
    assert any(l.startswith("cuda: no devices:") and "CUDA_ERROR_NO_DEVICE" in l for l in out.splitlines()), out


def test_offload_backends_cli_lists_cuda(run_child: Any, child_env: Any, simulated: Any) -> None:
    code = "import runpy, sys; sys.argv = ['offload', 'backends']; runpy.run_module('offload', run_name='__main__')"
    out = run_child(code, child_env(devices=2)).stdout
    line = next(l for l in out.splitlines() if l.startswith("cuda"))
    assert "offload-cuda" in line and "loaded" in line and line.split()[-1] == "2"


_CROSS = (
    PRELUDE
    + r"""
ol.olInit()
devices = platform_devices()
gpu0, gpu1 = devices["cuda"]
host = devices["host"][0]
size = 4096
pattern = bytes(range(256)) * (size // 256)
src = ctypes.create_string_buffer(pattern, size)
back = ctypes.create_string_buffer(size)
a = ol.olMemAlloc(gpu0, ol.AllocType.DEVICE, size)
b = ol.olMemAlloc(gpu1, ol.AllocType.DEVICE, size)
c = ol.olMemAlloc(gpu1, ol.AllocType.MANAGED, size)
ol.olMemcpy(None, a, gpu0, ctypes.addressof(src), host, size)
ol.olMemcpy(None, b, gpu1, a, gpu0, size)                      # synchronous peer copy
ol.olMemcpy(None, ctypes.addressof(back), host, b, gpu1, size)
sync_ok = back.raw == pattern
queue = ol.olCreateQueue(gpu0)
ol.olMemcpy(queue, c, gpu1, a, gpu0, size)                     # queued peer copy
ol.olSyncQueue(queue)
queued_ok = ctypes.string_at(c, size) == pattern
# a kernel on the second GPU, its output copied to the first
program = ol.olCreateProgram(gpu1, image("foo"))
foo = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
q1 = ol.olCreateQueue(gpu1)
ol.olLaunchKernel(q1, gpu1, foo, struct.pack("P", b), launch())
ol.olMemcpy(q1, a, gpu0, b, gpu1, 256)
ol.olMemcpy(q1, ctypes.addressof(back), host, a, gpu0, 256)
ol.olSyncQueue(q1)
kernel_ok = list(struct.unpack("64I", back.raw[:256])) == list(range(64))
wrong = []  # DEVICE memory of one GPU passed as memory of the other: refused, never copied
for call in (lambda: ol.olMemcpy(None, ctypes.addressof(back), host, a, gpu1, 8),
             lambda: ol.olMemcpy(q1, b, gpu0, ctypes.addressof(src), host, 8),
             lambda: ol.olMemcpy(None, a, gpu1, b, gpu1, 8)):
    try:
        call()
        wrong.append("accepted")
    except ol.OffloadError as error:
        wrong.append(error.code.name)
names = [ol.olGetDeviceInfo(d, ol.DeviceInfo.NAME) for d in (gpu0, gpu1)]
uids = [ol.olGetDeviceInfo(d, ol.DeviceInfo.UID) for d in (gpu0, gpu1)]
for q in (queue, q1):
    ol.olDestroyQueue(q)
ol.olDestroyProgram(program)
for m in (a, b, c):
    ol.olMemFree(m)
ol.olShutDown()
emit({"sync": sync_ok, "queued": queued_ok, "kernel": kernel_ok, "names": names, "uids": uids, "wrong": wrong})
"""
)


def test_two_devices_cross_gpu_copies(run_child: Any, child_env: Any, kernels: Any, simulated: Any) -> None:
    child = run_child(_CROSS, child_env(devices=2, kernels=kernels))
    out = child.result
    assert out["sync"] and out["queued"] and out["kernel"], out
    assert len(set(out["uids"])) == 2
    assert out["wrong"] == ["INVALID_ARGUMENT"] * 3, out["wrong"]
    assert all("gpusim" in name for name in out["names"]), "simulated devices must say so in their names"
    assert "leak" not in child.stderr, child.stderr
