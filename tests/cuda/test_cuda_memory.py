"""Memory on the CUDA platform: fills of every pattern size (native 1/2/4-byte, misaligned, and
strided for the rest), each allocation kind, registration, and copies in every direction."""

from __future__ import annotations

from typing import Any

from cuda_child import offload_child

_MEMORY = offload_child(
    r"""
host = platform_devices()["host"][0]
q = ol.olCreateQueue(gpu)
out = {}
mem = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 4096)
back = ctypes.create_string_buffer(4096)
for n in (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 64):
    for offset in (0, 1, 2):
        for queued in (False, True):
            pattern = bytes((17 * n + 3 * i + offset + 1) % 251 for i in range(n))
            count = (1000 // n) * n
            zero = ctypes.create_string_buffer(4096)
            ol.olMemcpy(None, mem, gpu, ctypes.addressof(zero), host, 4096)
            ol.olMemFill(q if queued else None, mem + offset, pattern, count)
            if queued:
                ol.olSyncQueue(q)
            ol.olMemcpy(None, ctypes.addressof(back), host, mem, gpu, 4096)
            want = b"\0" * offset + pattern * (count // n) + b"\0" * (4096 - offset - count)
            out[f"{n}/{offset}/{int(queued)}"] = back.raw == want
kinds = {}
for kind in (ol.AllocType.DEVICE, ol.AllocType.HOST, ol.AllocType.MANAGED):
    a = ol.olMemAlloc(gpu, kind, 256)
    b = ol.olMemAlloc(gpu, kind, 256)
    data = bytes(range(256))
    src = ctypes.create_string_buffer(data, 256)
    ol.olMemcpy(q, a, gpu, ctypes.addressof(src), host, 256)
    ol.olMemcpy(q, b, gpu, a, gpu, 256)
    ol.olMemcpy(q, ctypes.addressof(back), host, b, gpu, 256)
    ol.olSyncQueue(q)
    kinds[kind.name] = back.raw[:256] == data
    ol.olMemFree(a)
    ol.olMemFree(b)
out["kinds"] = kinds
user = ctypes.create_string_buffer(8192)
pinned = ol.olMemRegister(gpu, ctypes.addressof(user), 8192, 0)
ol.olMemcpy(q, mem, gpu, pinned, host, 64)
ol.olSyncQueue(q)
ol.olMemUnregister(gpu, pinned, 0)
out["registered"] = True
ol.olMemFree(mem)
ol.olDestroyQueue(q)
ol.olShutDown()
emit(out)
"""
)


def test_fills_copies_and_kinds(run_child: Any, child_env: Any, kernels: Any) -> None:
    child = run_child(_MEMORY, child_env(kernels=kernels))
    out = child.result
    wrong = [key for key, ok in out.items() if ok is False]
    assert not wrong, f"fills that wrote the wrong bytes (pattern size/offset/queued): {wrong}"
    assert out["kinds"] == {"DEVICE": True, "HOST": True, "MANAGED": True}
    assert out["registered"] is True
    assert "leak" not in child.stderr
