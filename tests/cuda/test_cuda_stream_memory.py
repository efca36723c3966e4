"""Stream-ordered memory on the CUDA backend (issue 32, part 3): olMemAllocAsync / olMemFreeAsync
over cuMemAllocFromPoolAsync / cuMemFreeAsync on offload's own pool, on the simulated driver,
with the allocation map as strict as olMemAlloc's (a range freed on a queue is refused at once),
the refusals named, and nothing leaked at shutdown (the simulator's leak check)."""

from __future__ import annotations

from typing import Any

from cuda_child import PRELUDE

_FLAT = (
    PRELUDE
    + r"""
ol.olInit()
devs = platform_devices()
gpu, gpu1, host = devs["cuda"][0], devs["cuda"][1], devs["host"][0]
out = {}
q = ol.olCreateQueue(gpu)
n = 1 << 16
a = ol.olMemAllocAsync(q, ol.AllocType.DEVICE, n)
out["info"] = [ol.olGetMemInfo(a, ol.MemInfo.SIZE), ol.olGetMemInfo(a, ol.MemInfo.TYPE).name]
ol.olMemFill(q, a, b"\x2a", n)
back = (ctypes.c_uint8 * n)()
ol.olMemcpy(q, ctypes.addressof(back), host, a, gpu, n)
ol.olMemFreeAsync(q, a)
out["after_free"] = [error_of(ol.olMemFill, q, a, b"\x01", 4)[0], error_of(ol.olMemFreeAsync, q, a)[0],
                     error_of(ol.olMemFree, a)[0], error_of(ol.olGetMemInfo, a, ol.MemInfo.SIZE)[0]]
ol.olSyncQueue(q)
out["data"] = bytes(back) == b"\x2a" * n
# a loop of allocate, use, free on one queue: ordered without a synchronisation
for i in range(20):
    t = ol.olMemAllocAsync(q, ol.AllocType.DEVICE, 4096)
    ol.olMemFill(q, t, bytes([i]), 4096)
    ol.olMemcpy(q, ctypes.addressof(back), host, t, gpu, 4096)
    ol.olMemFreeAsync(q, t)
ol.olSyncQueue(q)
out["loop"] = bytes(back[:4096]) == bytes([19]) * 4096
h = ol.olMemAlloc(gpu, ol.AllocType.HOST, 64)
d1 = ol.olMemAlloc(gpu1, ol.AllocType.DEVICE, 64)
sync_alloc = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
out["refused"] = [
    error_of(ol.olMemAllocAsync, q, ol.AllocType.HOST, 64)[0],
    error_of(ol.olMemAllocAsync, q, ol.AllocType.DEVICE, 0)[0],
    error_of(ol.olMemFreeAsync, q, h)[0],
    error_of(ol.olMemFreeAsync, q, d1)[0],
    error_of(ol.olMemFreeAsync, q, 0x1234)[0],
    error_of(ol.olMemFreeAsync, None, h)[0],
]
out["free_sync_alloc_async"] = error_of(ol.olMemFreeAsync, q, sync_alloc)  # cuMemFreeAsync takes cuMemAlloc memory
live = ol.olMemAllocAsync(q, ol.AllocType.DEVICE, 256)   # left for the shutdown to free
kept = ol.olMemAllocAsync(q, ol.AllocType.DEVICE, 256)
out["sync_free_of_async"] = error_of(ol.olMemFree, kept)
ol.olMemFree(h); ol.olMemFree(d1)
ol.olDestroyQueue(q)
out["shutdown"] = error_of(ol.olShutDown)
emit(out)
"""
)


def test_stream_ordered_memory_on_cuda(run_child: Any, child_env: Any, simulator: Any, need_devices: Any) -> None:
    need_devices(2)  # a second GPU's memory is among the refusals (a real-driver run may have one GPU)
    child = run_child(_FLAT, child_env(devices=2))
    out = child.result
    assert out["info"] == [1 << 16, "DEVICE"]
    assert out["after_free"] == ["INVALID_ARGUMENT"] * 3 + ["NOT_FOUND"]
    assert out["data"] is True and out["loop"] is True
    assert out["refused"] == ["UNSUPPORTED", "INVALID_SIZE", "INVALID_ARGUMENT", "INVALID_DEVICE", "INVALID_ARGUMENT",
                              "INVALID_NULL_HANDLE"]
    assert out["free_sync_alloc_async"] is None and out["sync_free_of_async"] is None
    assert out["shutdown"] is None
    if simulator is not None:
        assert "gpusim: leak" not in child.stderr, child.stderr
