"""6.5 memory (olMemAlloc, olMemFree, olMemcpy, olMemFill, olGetMemInfo, olGetMemInfoSize,
olMemRegister)."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import (
    FORCE_UINT32,
    NULL_HANDLE,
    NULL_POINTER,
    Base,
    BlockedQueue,
    global_variable,
    kernel,
    launch,
    ptr_arg,
    raises,
    require,
    u32s,
    zero,
)

A = ol.AllocType
_TYPES = list(A)


def _type_id(alloc_type: Any) -> str:
    return alloc_type.name


def _require_type(capabilities: Any, alloc_type: Any) -> None:
    if alloc_type is A.MANAGED:
        require(capabilities, "managed_memory")
    elif alloc_type is A.HOST:
        require(capabilities, "host_memory")


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

_SIZE = 1024


def _host_buffer(value: int, size: int = _SIZE) -> Any:
    return (ctypes.c_uint8 * size)(*([value] * size))


class TestMemcpy(Base):
    def test_success_htod(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, alloc: Callable[..., int]
    ) -> None:
        require(capabilities, "copies")
        src, out = _host_buffer(42), _host_buffer(7)
        dst = alloc(_SIZE, A.DEVICE)
        ol.olMemcpy(None, dst, device, ctypes.addressof(out), host_device, _SIZE)  # 7s first
        ol.olMemcpy(queue, dst, device, ctypes.addressof(src), host_device, _SIZE)
        ol.olSyncQueue(queue)
        ol.olMemcpy(None, ctypes.addressof(out), host_device, dst, device, _SIZE)  # read back
        assert list(out) == [42] * _SIZE, "the queued host-to-device copy did not land"

    def test_success_dtoh(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, alloc: Callable[..., int]
    ) -> None:
        require(capabilities, "copies")
        src, out = _host_buffer(42), _host_buffer(0)
        mem = alloc(_SIZE, A.DEVICE)
        ol.olMemcpy(queue, mem, device, ctypes.addressof(src), host_device, _SIZE)
        ol.olMemcpy(queue, ctypes.addressof(out), host_device, mem, device, _SIZE)
        ol.olSyncQueue(queue)
        assert list(out) == [42] * _SIZE

    def test_success_dtod(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, alloc: Callable[..., int]
    ) -> None:
        require(capabilities, "copies")
        require(capabilities, "device_to_device")
        src, out = _host_buffer(42), _host_buffer(0)
        first, second = alloc(_SIZE, A.DEVICE), alloc(_SIZE, A.DEVICE)
        ol.olMemcpy(queue, first, device, ctypes.addressof(src), host_device, _SIZE)
        ol.olMemcpy(queue, second, device, first, device, _SIZE)
        ol.olMemcpy(queue, ctypes.addressof(out), host_device, second, device, _SIZE)
        ol.olSyncQueue(queue)
        assert list(out) == [42] * _SIZE

    def test_success_htoh_sync(self, host_device: Any) -> None:
        src, dst = _host_buffer(42), _host_buffer(0)
        ol.olMemcpy(None, ctypes.addressof(dst), host_device, ctypes.addressof(src), host_device, _SIZE)
        assert list(dst) == [42] * _SIZE  # no queue: done on return

    def test_success_dtoh_sync(
        self, device: Any, host_device: Any, capabilities: Any, alloc: Callable[..., int]
    ) -> None:
        require(capabilities, "copies")
        src, out = _host_buffer(42), _host_buffer(0)
        mem = alloc(_SIZE, A.DEVICE)
        ol.olMemcpy(None, mem, device, ctypes.addressof(src), host_device, _SIZE)
        ol.olMemcpy(None, ctypes.addressof(out), host_device, mem, device, _SIZE)
        assert list(out) == [42] * _SIZE

    def test_success_size_zero(self, host_device: Any) -> None:
        src, dst = _host_buffer(42), _host_buffer(0)
        ol.olMemcpy(None, ctypes.addressof(dst), host_device, ctypes.addressof(src), host_device, 0)
        assert list(dst) == [0] * _SIZE

    def test_invalid_null_pointers(self, device: Any, host_device: Any, alloc: Callable[..., int]) -> None:
        buf = _host_buffer(0)
        mem = alloc(_SIZE, A.DEVICE)
        with raises(NULL_POINTER):
            ol.olMemcpy(None, None, device, ctypes.addressof(buf), host_device, _SIZE)
        with raises(NULL_POINTER):
            ol.olMemcpy(None, mem, device, None, host_device, _SIZE)

    def test_invalid_null_devices(self, device: Any, host_device: Any, alloc: Callable[..., int]) -> None:
        buf = _host_buffer(0)
        mem = alloc(_SIZE, A.DEVICE)
        with raises(NULL_HANDLE):
            ol.olMemcpy(None, mem, None, ctypes.addressof(buf), host_device, _SIZE)
        with raises(NULL_HANDLE):
            ol.olMemcpy(None, mem, device, ctypes.addressof(buf), None, _SIZE)


class TestMemcpyGlobal(Base):
    """olMemcpyGlobalTest: program "global" (``uint32_t global[64]``, kernels write/read)."""

    @pytest.fixture
    def program(self, load_program: Callable[[str], Any]) -> Any:
        return load_program("global")

    @pytest.fixture
    def global_address(self, program: Any) -> int:
        return ol.olGetSymbolInfo(global_variable(program, "global"), ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)

    def test_success_round_trip(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, global_address: int
    ) -> None:
        require(capabilities, "copies")
        src = (ctypes.c_uint32 * 64)(*range(64))
        out = (ctypes.c_uint32 * 64)()
        ol.olMemcpy(queue, global_address, device, ctypes.addressof(src), host_device, 64 * 4)
        ol.olMemcpy(queue, ctypes.addressof(out), host_device, global_address, device, 64 * 4)
        ol.olSyncQueue(queue)
        assert list(out) == list(range(64))

    def test_success_write(
        self,
        device: Any,
        host_device: Any,
        capabilities: Any,
        queue: Any,
        program: Any,
        global_address: int,
        alloc: Callable[..., int],
    ) -> None:
        require(capabilities, "kernel_launch")
        require(capabilities, "copies")
        src = (ctypes.c_uint32 * 64)(*range(64))
        out = alloc(64 * 4)
        zero(out, 64 * 4)
        ol.olMemcpy(queue, global_address, device, ctypes.addressof(src), host_device, 64 * 4)
        ol.olLaunchKernel(queue, device, kernel(program, "read"), ptr_arg(out), launch())
        ol.olSyncQueue(queue)
        assert u32s(out, 64) == list(range(64))

    def test_success_read(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, program: Any, global_address: int
    ) -> None:
        require(capabilities, "kernel_launch")
        require(capabilities, "copies")
        out = (ctypes.c_uint32 * 64)()
        ol.olLaunchKernel(queue, device, kernel(program, "write"), None, launch())
        ol.olMemcpy(queue, ctypes.addressof(out), host_device, global_address, device, 64 * 4)
        ol.olSyncQueue(queue)
        assert list(out) == [i * 2 for i in range(64)]


# --- olMemFill -------------------------------------------------------------------------------

_FILLS = [
    # (id, pattern, fill size)
    ("8", b"\x42", 1024),
    ("16", struct.pack("<H", 0x4242), 1024),
    ("32", struct.pack("<I", 0xDEADBEEF), 1024),
    ("Large", struct.pack("<QQ", 2**64 - 1, 2**64 - 1), 1024),
    ("LargeByteAligned", bytes(range(1, 18)), 17 * 64),
    ("8NotMultiple4", b"\x42", 1023),
    ("16NotMultiple4", struct.pack("<H", 0x4243), 1022),
    ("NonPow2", bytes([0x11, 0x22, 0x33]), 3 * 100),
    ("NonPow2Small", bytes([0x11, 0x22, 0x33]), 3),
]
_FILL_IDS = [f[0] for f in _FILLS]


def _expected(pattern: bytes, size: int) -> bytes:
    return pattern * (size // len(pattern))


def _read_back(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size)


class TestMemFill(Base):
    @pytest.mark.parametrize(("name", "pattern", "size"), _FILLS, ids=_FILL_IDS)
    def test_success(
        self, capabilities: Any, queue: Any, alloc: Callable[..., int], name: str, pattern: bytes, size: int
    ) -> None:
        require(capabilities, "fill")
        mem = alloc(size + 16)
        zero(mem, size + 16)
        ol.olMemFill(queue, mem, pattern, size)
        ol.olSyncQueue(queue)
        assert _read_back(mem, size) == _expected(pattern, size)
        assert _read_back(mem + size, 16) == bytes(16), "olMemFill wrote past FillSize"

    @pytest.mark.parametrize(("name", "pattern", "size"), _FILLS, ids=_FILL_IDS)
    def test_success_synchronous(
        self, capabilities: Any, alloc: Callable[..., int], name: str, pattern: bytes, size: int
    ) -> None:
        require(capabilities, "fill")
        mem = alloc(size)
        zero(mem, size)
        ol.olMemFill(None, mem, pattern, size)
        assert _read_back(mem, size) == _expected(pattern, size)

    @pytest.mark.parametrize(
        ("name", "pattern", "size"),
        [f for f in _FILLS if f[0] in ("32", "NonPow2", "NonPow2Small")],
        ids=["32", "NonPow2", "NonPow2Small"],
    )
    def test_success_device(
        self,
        device: Any,
        host_device: Any,
        capabilities: Any,
        queue: Any,
        alloc: Callable[..., int],
        name: str,
        pattern: bytes,
        size: int,
    ) -> None:
        require(capabilities, "fill")
        require(capabilities, "copies")
        mem = alloc(size, A.DEVICE)
        out = (ctypes.c_uint8 * size)()
        ol.olMemFill(queue, mem, pattern, size)
        ol.olMemcpy(queue, ctypes.addressof(out), host_device, mem, device, size)
        ol.olSyncQueue(queue)
        assert bytes(out) == _expected(pattern, size)

    @pytest.mark.parametrize(("name", "pattern", "size"), _FILLS, ids=_FILL_IDS)
    def test_success_enqueue(
        self,
        capabilities: Any,
        queue: Any,
        alloc: Callable[..., int],
        name: str,
        pattern: bytes,
        size: int,
    ) -> None:
        """The fill waits behind a blocked host task on the queue (ManuallyTriggeredTask)."""
        require(capabilities, "fill")
        require(capabilities, "host_functions")
        require(capabilities, "queued_fill")
        mem = alloc(size)
        zero(mem, size)
        with BlockedQueue(queue) as task:
            ol.olMemFill(queue, mem, pattern, size)
            assert task.started.wait(10), "the host task did not start"
            assert _read_back(mem, size) == bytes(size), "olMemFill ran before earlier work of its queue"
            assert ol.olQueryQueue(queue) is False
            task.trigger()
        assert _read_back(mem, size) == _expected(pattern, size)

    def test_invalid_pattern_size(self, queue: Any, alloc: Callable[..., int]) -> None:
        mem = alloc(1025)
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemFill(queue, mem, b"\x42\x42", 1025)

    def test_invalid_pattern_larger_than_fill(self, queue: Any, alloc: Callable[..., int]) -> None:
        mem = alloc(8)
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemFill(queue, mem, b"\x01" * 8, 4)

    def test_invalid_pattern_empty(self, queue: Any, alloc: Callable[..., int]) -> None:
        mem = alloc(8)
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olMemFill(queue, mem, b"", 8)

    def test_invalid_null_ptr(self, queue: Any) -> None:
        with raises(NULL_POINTER):
            ol.olMemFill(queue, None, b"\x42", 8)

    def test_invalid_null_pattern(self, queue: Any, alloc: Callable[..., int]) -> None:
        mem = alloc(8)
        with raises(NULL_POINTER):
            ol.olMemFill(queue, mem, None, 8)


# --- olGetMemInfo / olGetMemInfoSize -------------------------------------------------------

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
