"""Flat API leftovers: the right code and a message with detail (addresses in hex) for each."""

from __future__ import annotations

import re

import pytest

import offload as ol
import offload_host

E = ol.ErrorCode


def _error(call, *args) -> ol.OffloadError:
    with pytest.raises(ol.OffloadError) as info:
        call(*args)
    return info.value


@pytest.mark.parametrize("name", ["foo\udc80", "\ud800", "fo\udfffo"])
def test_a_name_that_cannot_be_encoded_is_invalid_argument(host: ol.DeviceHandle, name: str) -> None:
    program = ol.olCreateProgram(host, offload_host.build_test_kernel("foo"))
    try:
        for kind in (ol.SymbolKind.KERNEL, ol.SymbolKind.GLOBAL_VARIABLE):
            error = _error(ol.olGetSymbol, program, name, kind)
            assert error.code is E.INVALID_ARGUMENT and "UTF-8" in error.details, error
    finally:
        ol.olDestroyProgram(program)


def test_a_register_running_past_the_address_space_is_invalid_size(host: ol.DeviceHandle) -> None:
    """Also when a registered range lies below it (no partial-overlap report for it)."""
    block = ol.olMemAlloc(host, ol.AllocType.HOST, 4096)
    try:
        ol.olMemRegister(host, block, 4096, 0)
        for size in ((1 << 64) - block + 4096, (1 << 64) - 1):
            assert _error(ol.olMemRegister, host, block, size, 0).code is E.INVALID_SIZE
        ol.olMemUnregister(host, block, 0)
    finally:
        ol.olMemFree(block)


@pytest.mark.parametrize(
    "call, prop",
    [
        ("device", ol.PlatformInfo.NAME),
        ("device", ol.PlatformInfo.BACKEND),
        ("device", ol.QueueInfo.DEVICE),
        ("device_size", ol.PlatformInfo.NAME),
        ("platform", ol.DeviceInfo.NAME),
        ("platform", ol.DeviceInfo.TYPE),
        ("platform_size", ol.DeviceInfo.NAME),
    ],
)
def test_an_enum_of_the_wrong_class_is_invalid_enumeration(host: ol.DeviceHandle, call: str, prop: object) -> None:
    platform = ol.olGetDeviceInfo(host, ol.DeviceInfo.PLATFORM)
    ol.olGetDeviceInfo(host, ol.DeviceInfo.NAME)  # cached: the wrong class must not hit the cache either
    functions = {
        "device": lambda: ol.olGetDeviceInfo(host, prop),
        "device_size": lambda: ol.olGetDeviceInfoSize(host, prop),
        "platform": lambda: ol.olGetPlatformInfo(platform, prop),
        "platform_size": lambda: ol.olGetPlatformInfoSize(platform, prop),
    }
    error = _error(functions[call])
    assert error.code is E.INVALID_ENUMERATION and type(prop).__name__ in error.details, error


def test_plain_ints_still_name_properties(host: ol.DeviceHandle) -> None:
    assert ol.olGetDeviceInfo(host, int(ol.DeviceInfo.NAME)) == ol.olGetDeviceInfo(host, ol.DeviceInfo.NAME)


@pytest.mark.parametrize("alloc_type", list(ol.AllocType))
def test_an_impossible_allocation_names_its_size(host: ol.DeviceHandle, alloc_type: ol.AllocType) -> None:
    error = _error(ol.olMemAlloc, host, alloc_type, 1 << 60)
    assert error.code in (E.OUT_OF_RESOURCES, E.OUT_OF_HOST_MEMORY if hasattr(E, "OUT_OF_HOST_MEMORY") else E.OUT_OF_RESOURCES)
    assert "1152921504606846976 bytes (0x1000000000000000)" in error.details, error.details
    assert alloc_type.name in error.details
    assert not re.search(r"MemoryError: *$", error.details)


def test_addresses_in_messages_are_hex(host: ol.DeviceHandle) -> None:
    error = _error(lambda: ol.olMemUnregister(host, 0x1234_5678, 0))
    assert "0x12345678" in error.details and "305419896" not in error.details, error.details


def test_unknown_addresses_have_liboffloads_words(host: ol.DeviceHandle) -> None:
    """liboffload's details name no address (the trace line's parameters show it): issue 29."""
    assert _error(lambda: ol.olMemFree(0x1234_5678)).details == "address is not a known allocation"
    assert _error(lambda: ol.olGetMemInfo(0x1234_5678, ol.MemInfo.SIZE)).details == "allocated memory information not found"
