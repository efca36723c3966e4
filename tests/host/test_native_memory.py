"""The host backend's native module used directly (no core API): aligned allocations, fills of
any pattern length, copies (overlapping ones as memmove)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import pytest

from native_direct import Buffer, alloc, native


# --------------------------------------------------------------------------------------
# Memory


def test_mem_alloc_aligned_and_zero_size() -> None:
    addresses = [native.mem_alloc(size) for size in (0, 1, 3, 64, 1000, 1 << 20)]
    try:
        assert all(a != 0 and a % 64 == 0 for a in addresses)
        assert len(set(addresses)) == len(addresses)
    finally:
        for a in addresses:
            native.mem_free(a)
    with pytest.raises(MemoryError):
        native.mem_alloc(1 << 62)
    with pytest.raises(OverflowError):
        native.mem_alloc(-1)
    native.mem_free(0)


@pytest.mark.parametrize("plen", [1, 2, 3, 4, 16, 17])
@pytest.mark.parametrize("size", [0, 1, 2, 5, 16, 17, 100, 1001, 65537])
def test_fill(alloc: Callable[..., Buffer], plen: int, size: int) -> None:
    guard = 64
    buf = alloc(ctypes.c_ubyte, size + guard, fill=0xEE)
    pattern = bytes((i * 37 + 11) % 256 for i in range(plen))
    native.fill(buf.address, pattern, size)
    expected = (pattern * (size // plen + 1))[:size] + b"\xee" * guard
    assert bytes(buf.array) == expected


def test_fill_accepts_buffers_and_rejects_empty(alloc: Callable[..., Buffer]) -> None:
    buf = alloc(ctypes.c_ubyte, 10)
    native.fill(buf.address, bytearray(b"ab"), 5)
    native.fill(buf.address + 5, memoryview(b"xyz"), 5)
    assert bytes(buf.array) == b"ababaxyzxy"
    with pytest.raises(ValueError):
        native.fill(buf.address, b"", 4)
    with pytest.raises(TypeError):
        native.fill(buf.address, "ab", 4)


def test_copy(alloc: Callable[..., Buffer]) -> None:
    src = alloc(ctypes.c_ubyte, 1000)
    dst = alloc(ctypes.c_ubyte, 1000)
    src.array[:] = [i % 251 for i in range(1000)]
    native.copy(dst.address, src.address, 999)
    assert list(dst.array[:999]) == [i % 251 for i in range(999)] and dst.array[999] == 0
    # Overlapping ranges behave like memmove.
    native.copy(src.address + 1, src.address, 500)
    assert list(src.array[:501]) == [0] + [i % 251 for i in range(500)]
    native.copy(dst.address, src.address, 0)
