"""olMemRegister / olMemUnregister: the core counts users per registered range, so a backend's
``mem_register`` runs once per range and ``mem_unregister`` once, for that exact range, when its
last user goes (with ``unlock`` only for a range registered with ``LOCK_MEMORY``)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from helpers import MinimalBackend
from offload._core.session import STATE

LOCK, UNLOCK = int(ol.MemoryRegisterFlag.LOCK_MEMORY), int(ol.MemoryRegisterFlag.UNLOCK_MEMORY)


class RecordingBackend(MinimalBackend):
    """Required hooks plus registration; every registration hook call is recorded."""

    calls: list[tuple[Any, ...]] = []

    @ol.hookimpl
    def init(self) -> list[str]:
        return ["dev"]

    @ol.hookimpl
    def get_device_info(self, device: str) -> dict[Any, Any]:
        return {ol.DeviceInfo.NAME: "recording"}

    @ol.hookimpl
    def mem_register(self, device: str, address: int, size: int, lock: bool) -> int:
        self.calls.append(("register", address, size, lock))
        return address

    @ol.hookimpl
    def mem_unregister(self, device: str, address: int, size: int, unlock: bool) -> None:
        self.calls.append(("unregister", address, size, unlock))


@pytest.fixture
def recording() -> Iterator[ol.Device]:
    assert STATE.ctx is None
    RecordingBackend.calls = []
    ol.register_backend("recording", RecordingBackend)
    ol.olInit()
    try:
        found: list[ol.Device] = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        yield next(d for d in found if d.platform.name == "recording")
    finally:
        while STATE.ctx is not None:
            ol.olShutDown()
        ol.unregister_backend("recording")


def test_nested_registrations_call_the_backend_once(recording: ol.Device) -> None:
    buffer = (ctypes.c_uint8 * 8192)()
    base = ctypes.addressof(buffer)
    assert ol.olMemRegister(recording, base, 8192, LOCK) == base
    assert ol.olMemRegister(recording, base + 64, 128, 0) == base + 64  # inside: one more user
    assert ol.olMemRegister(recording, base, 8192, 0) == base  # the same range again
    assert RecordingBackend.calls == [("register", base, 8192, True)]
    ol.olMemUnregister(recording, base + 64, UNLOCK)
    ol.olMemUnregister(recording, base, UNLOCK)
    assert len(RecordingBackend.calls) == 1  # a user is left
    ol.olMemUnregister(recording, base + 4000, UNLOCK)  # any address inside names the range
    assert RecordingBackend.calls[1:] == [("unregister", base, 8192, True)]
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemUnregister(recording, base, 0)
    assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT and "not registered" in info.value.details


def test_partial_overlap_is_refused_and_unlock_needs_a_lock(recording: ol.Device) -> None:
    buffer = (ctypes.c_uint8 * 8192)()
    base = ctypes.addressof(buffer)
    ol.olMemRegister(recording, base, 4096, 0)
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemRegister(recording, base + 2048, 4096, 0)
    assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT and "partially overlaps" in info.value.details
    ol.olMemRegister(recording, base + 4096, 4096, 0)  # adjacent: a range of its own
    ol.olMemUnregister(recording, base, UNLOCK)  # registered without LOCK_MEMORY: nothing to unlock
    ol.olMemUnregister(recording, base + 4096, 0)
    assert RecordingBackend.calls == [
        ("register", base, 4096, False),
        ("register", base + 4096, 4096, False),
        ("unregister", base, 4096, False),
        ("unregister", base + 4096, 4096, False),
    ]
