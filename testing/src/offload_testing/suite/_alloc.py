"""6.5 memory: olMemAlloc, olMemFree, olGetMemInfo, olGetMemInfoSize, olMemRegister."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import FORCE_UINT32, NULL_HANDLE, NULL_POINTER, Base, raises, require

A = ol.AllocType
_TYPES = list(A)


def _type_id(alloc_type: Any) -> str:
    return str(alloc_type.name)


def _require_type(capabilities: Any, alloc_type: Any) -> None:
    if alloc_type is A.MANAGED:
        require(capabilities, "managed_memory", "allocates MANAGED memory")
    elif alloc_type is A.HOST:
        require(capabilities, "host_memory", "allocates HOST memory")


class TestMemAlloc(Base):
    @pytest.fixture(autouse=True)
    def _needs_memory(self, capabilities: Any) -> None:
        require(capabilities, "memory")

    @pytest.mark.parametrize("alloc_type", _TYPES, ids=_type_id)
    def test_success(self, device: Any, capabilities: Any, alloc_type: Any, request: pytest.FixtureRequest) -> None:
        _require_type(capabilities, alloc_type)
        address = ol.olMemAlloc(device, alloc_type, 1024)
        try:
            assert type(address) is int and address != 0
            assert ol.olGetMemInfo(address, M.SIZE) == 1024 and ol.olGetMemInfo(address, M.TYPE) == alloc_type
            # the memory holds what is put in it: through copies, else directly where host-visible
            pattern = bytes(range(256)) * 4
            if capabilities.copies:
                src, out = (ctypes.c_uint8 * 1024).from_buffer_copy(pattern), (ctypes.c_uint8 * 1024)()
                host = request.getfixturevalue("host_device")
                ol.olMemcpy(None, address, device, ctypes.addressof(src), host, 1024)
                ol.olMemcpy(None, ctypes.addressof(out), host, address, device, 1024)
                assert bytes(out) == pattern, "the allocation does not hold what was copied into it"
            elif alloc_type is not A.DEVICE or device.is_host:
                ctypes.memmove(address, pattern, 1024)
                assert ctypes.string_at(address, 1024) == pattern
        finally:
            ol.olMemFree(address)

    def test_distinct_allocations(self, device: Any) -> None:
        first = ol.olMemAlloc(device, A.DEVICE, 1024)
        second = ol.olMemAlloc(device, A.DEVICE, 1024)
        try:
            assert first + 1024 <= second or second + 1024 <= first, "two live allocations overlap"
        finally:
            ol.olMemFree(first)
            ol.olMemFree(second)

    def test_invalid_null_device(self) -> None:
        with raises(NULL_HANDLE):
            ol.olMemAlloc(None, A.DEVICE, 1024)

    def test_invalid_size_zero(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemAlloc(device, A.DEVICE, 0)

    def test_invalid_enumeration_type(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olMemAlloc(device, FORCE_UINT32, 1024)


class TestMemFree(Base):
    @pytest.fixture(autouse=True)
    def _needs_memory(self, capabilities: Any) -> None:
        require(capabilities, "memory")

    @pytest.mark.parametrize("alloc_type", _TYPES, ids=_type_id)
    def test_success(self, device: Any, capabilities: Any, alloc_type: Any) -> None:
        _require_type(capabilities, alloc_type)
        address = ol.olMemAlloc(device, alloc_type, 1024)
        ol.olMemFree(address)
        with raises(ol.ErrorCode.NOT_FOUND):  # freed: no longer an allocation
            ol.olGetMemInfo(address, M.SIZE)
        with raises(ol.ErrorCode.INVALID_ARGUMENT):  # and not freed twice
            ol.olMemFree(address)

    def test_invalid_null_ptr(self, device: Any) -> None:
        address = ol.olMemAlloc(device, A.DEVICE, 1024)
        with raises(NULL_POINTER):
            ol.olMemFree(None)
        with raises(NULL_POINTER):
            ol.olMemFree(0)
        ol.olMemFree(address)


# --- olMemcpy --------------------------------------------------------------------------------



M = ol.MemInfo


class TestMemInfo(Base):
    @pytest.mark.parametrize("offset", [0, 123], ids=["Base", "Offset"])
    @pytest.mark.parametrize("alloc_type", _TYPES, ids=_type_id)
    def test_success(self, device: Any, alloc: Callable[..., int], alloc_type: Any, offset: int) -> None:
        base = alloc(1024, alloc_type)
        ptr = base + offset
        assert ol.olGetMemInfo(ptr, M.DEVICE) is device
        assert ol.olGetMemInfo(ptr, M.BASE) == base
        assert ol.olGetMemInfo(ptr, M.SIZE) == 1024
        assert ol.olGetMemInfo(ptr, M.TYPE) == alloc_type
        assert isinstance(ol.olGetMemInfo(ptr, M.TYPE), ol.AllocType)

    def test_end_of_allocation(self, alloc: Callable[..., int]) -> None:
        base = alloc(1024, A.DEVICE)
        assert ol.olGetMemInfo(base + 1023, M.BASE) == base

    def test_invalid_not_found(self) -> None:
        with raises(ol.ErrorCode.NOT_FOUND):
            ol.olGetMemInfo(0x1234, M.BASE)

    def test_invalid_after_free(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "memory")
        address = ol.olMemAlloc(device, A.DEVICE, 1024)
        ol.olMemFree(address)
        with raises(ol.ErrorCode.NOT_FOUND):
            ol.olGetMemInfo(address, M.BASE)

    def test_invalid_null_ptr(self) -> None:
        with raises(NULL_POINTER):
            ol.olGetMemInfo(None, M.BASE)

    def test_invalid_enumeration(self, alloc: Callable[..., int]) -> None:
        base = alloc(1024, A.DEVICE)
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetMemInfo(base, FORCE_UINT32)


class TestMemInfoSize(Base):
    @pytest.mark.parametrize(
        ("prop", "size"), [(M.DEVICE, 8), (M.BASE, 8), (M.SIZE, 8), (M.TYPE, 4)], ids=["DEVICE", "BASE", "SIZE", "TYPE"]
    )
    def test_success(self, alloc: Callable[..., int], prop: Any, size: int) -> None:
        base = alloc(1024, A.DEVICE)
        assert ol.olGetMemInfoSize(base, prop) == size

    def test_invalid_enumeration(self, alloc: Callable[..., int]) -> None:
        base = alloc(1024, A.DEVICE)
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetMemInfoSize(base, FORCE_UINT32)

    def test_invalid_null_pointer(self) -> None:
        with raises(NULL_POINTER):
            ol.olGetMemInfoSize(None, M.SIZE)


# --- olMemRegister ---------------------------------------------------------------------------

_LOCK = ol.MemoryRegisterFlag.LOCK_MEMORY
_UNLOCK = ol.MemoryRegisterFlag.UNLOCK_MEMORY


class TestMemRegister(Base):
    @pytest.fixture(autouse=True)
    def _needs_register(self, capabilities: Any) -> None:
        require(capabilities, "mem_register")

    def test_success_register(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 4096)()
        pinned = ol.olMemRegister(device, ctypes.addressof(array), 4096, 0)
        assert type(pinned) is int and pinned != 0
        ol.olMemUnregister(device, ctypes.addressof(array), 0)

    def test_success_register_lock(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 4096)()
        try:
            pinned = ol.olMemRegister(device, ctypes.addressof(array), 4096, _LOCK)
        except ol.OffloadError as exc:
            if exc.code == ol.ErrorCode.OUT_OF_RESOURCES:
                pytest.skip(f"page-locking is not permitted here: {exc}")
            raise
        assert pinned != 0
        ol.olMemUnregister(device, ctypes.addressof(array), _UNLOCK)

    def test_success_multiple_register(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 4096)()
        address = ctypes.addressof(array)
        assert ol.olMemRegister(device, address, 4096, 0) != 0
        assert ol.olMemRegister(device, address, 4096, 0) != 0
        ol.olMemUnregister(device, address, 0)
        ol.olMemUnregister(device, address, 0)
        with raises(ol.ErrorCode.INVALID_ARGUMENT):  # both registrations are gone
            ol.olMemUnregister(device, address, 0)

    def test_invalid_size_register(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 64)()
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemRegister(device, ctypes.addressof(array), 0, 0)

    def test_invalid_ptr_register(self, device: Any) -> None:
        with raises(NULL_POINTER):
            ol.olMemRegister(device, None, 64, 0)

    def test_invalid_null_device(self) -> None:
        array = (ctypes.c_uint8 * 64)()
        with raises(NULL_HANDLE):
            ol.olMemRegister(None, ctypes.addressof(array), 64, 0)
        with raises(NULL_HANDLE):
            ol.olMemUnregister(None, ctypes.addressof(array), 0)

    def test_invalid_flags(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 64)()
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olMemRegister(device, ctypes.addressof(array), 64, FORCE_UINT32)

    def test_invalid_ptr_unregister(self, device: Any) -> None:
        with raises(NULL_POINTER):
            ol.olMemUnregister(device, None, 0)

    def test_unregistered_ptr_unregister(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 64)()
        with raises(ol.ErrorCode.INVALID_ARGUMENT):
            ol.olMemUnregister(device, ctypes.addressof(array), 0)

    def test_partial_overlap_ptr_register(self, device: Any) -> None:
        array = (ctypes.c_uint8 * 8192)()
        address = ctypes.addressof(array)
        ol.olMemRegister(device, address, 4096, 0)
        try:
            with raises(ol.ErrorCode.INVALID_ARGUMENT):
                ol.olMemRegister(device, address + 2048, 4096, 0)
        finally:
            ol.olMemUnregister(device, address, 0)
