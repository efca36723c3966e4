"""``offload.register_foreign_memory``: device memory another library allocated becomes copyable by
the core for as long as it is registered; nested registrations are counted; bad ranges, partial
overlaps and dead devices are refused by name. The device under test is the host backend
registered in-process under another platform name, so its memory counts as device memory."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload_host import HostBackend

E = ol.ErrorCode


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    monkeypatch.setenv("OFFLOAD_BACKENDS", "elsewhere,host")
    ol.register_backend("elsewhere", HostBackend)
    ol.olInit()
    try:
        found: list[Any] = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        device = next(d for d in found if d.platform.name == "elsewhere")
        host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
        yield device, host
    finally:
        ol.olShutDown()
        ol.unregister_backend("elsewhere")


def _read(device: Any, host: Any, address: int, size: int) -> bytes:
    out = (ctypes.c_uint8 * size)()
    ol.olMemcpy(None, ctypes.addressof(out), host, address, device, size)
    return bytes(out)


def test_registered_memory_is_copyable_while_registered(world: tuple[Any, Any]) -> None:
    device, host = world
    memory = (ctypes.c_uint8 * 256)(*range(256))  # "another library's device memory"
    base = ctypes.addressof(memory)
    with pytest.raises(ol.OffloadError) as refused:
        _read(device, host, base, 16)
    assert refused.value.code is E.INVALID_ARGUMENT and "not a live allocation" in refused.value.details
    outer = ol.register_foreign_memory(device, base, 256)
    inner = ol.register_foreign_memory(device, base + 16, 32)  # nested: counted, not registered twice
    assert outer.registered and inner.registered
    assert _read(device, host, base + 8, 16) == bytes(range(8, 24))
    queue = ol.olCreateQueue(device)  # a synchronous fill cannot tell the device of a non-allocation
    ol.olMemFill(queue, base + 16, b"\xab", 32)
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
    assert bytes(memory[16:48]) == b"\xab" * 32
    with pytest.raises(ol.OffloadError) as overrun:
        _read(device, host, base + 250, 16)
    assert overrun.value.code is E.INVALID_SIZE and "foreign memory" in overrun.value.details
    outer.release()
    assert _read(device, host, base, 4) == bytes(range(4))  # inner still holds the range
    inner.release()
    inner.release()  # idempotent
    with pytest.raises(ol.OffloadError):
        _read(device, host, base, 4)


def test_what_needs_no_registration(world: tuple[Any, Any]) -> None:
    device, host = world
    own = ol.olMemAlloc(device, ol.AllocType.DEVICE, 64)
    assert not ol.register_foreign_memory(device, own, 64).registered  # offload's own allocation
    memory = (ctypes.c_uint8 * 64)()
    assert not ol.register_foreign_memory(host, ctypes.addressof(memory), 64).registered  # host memory
    ol.olMemFree(own)


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("zero size", E.INVALID_SIZE, "empty or NULL"),
        ("null", E.INVALID_ARGUMENT, "empty or NULL"),
        ("partial overlap", E.INVALID_ARGUMENT, "partly overlaps"),
        ("not a device", E.INVALID_DEVICE, "no live device"),
        ("wraps", E.INVALID_SIZE, ""),
    ],
)
def test_refusals(world: tuple[Any, Any], case: str, code: ol.ErrorCode, words: str) -> None:
    device, _ = world
    memory = (ctypes.c_uint8 * 128)()
    base = ctypes.addressof(memory)
    kept = ol.register_foreign_memory(device, base, 64)
    calls = {
        "zero size": lambda: ol.register_foreign_memory(device, base, 0),
        "null": lambda: ol.register_foreign_memory(device, 0, 16),
        "partial overlap": lambda: ol.register_foreign_memory(device, base + 32, 64),
        "not a device": lambda: ol.register_foreign_memory("elsewhere:0", base, 16),
        "wraps": lambda: ol.register_foreign_memory(device, 2**64 - 8, 16),
    }
    with pytest.raises(ol.OffloadError) as info:
        calls[case]()
    assert info.value.code is code and words in info.value.details, info.value
    kept.release()


def test_a_device_of_an_ended_session() -> None:
    ol.olInit()
    found: list[Any] = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    ol.olShutDown()
    with pytest.raises(ol.OffloadError) as info:
        ol.register_foreign_memory(found[-1], 4096, 16)
    assert info.value.code is E.INVALID_DEVICE
