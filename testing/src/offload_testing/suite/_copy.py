"""6.5 memory: olMemcpy (buffers and global variables) and olMemFill."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import NULL_HANDLE, NULL_POINTER, Base, BlockedQueue, global_variable, kernel, launch, ptr_arg, raises
from ._helpers import DeviceMemory, require

A = ol.AllocType


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
    def program(self, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        require(capabilities, "globals")
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
        device_memory: DeviceMemory,
        device: Any,
        host_device: Any,
        capabilities: Any,
        queue: Any,
        program: Any,
        global_address: int,
    ) -> None:
        require(capabilities, "kernel_launch")
        require(capabilities, "copies")
        src = (ctypes.c_uint32 * 64)(*range(64))
        out = device_memory.alloc(64 * 4)
        ol.olMemcpy(queue, global_address, device, ctypes.addressof(src), host_device, 64 * 4)
        ol.olLaunchKernel(queue, device, kernel(program, "read"), ptr_arg(out), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == list(range(64))

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


def _fills(*names: str) -> list[Any]:
    """``(pattern, size)`` parameters of the fills named (every fill without names), by name."""
    return [pytest.param(pattern, size, id=name) for name, pattern, size in _FILLS if not names or name in names]


def _expected(pattern: bytes, size: int) -> bytes:
    return pattern * (size // len(pattern))


class TestMemFill(Base):
    @pytest.mark.parametrize(("pattern", "size"), _fills())
    def test_success(
        self, device_memory: DeviceMemory, capabilities: Any, queue: Any, pattern: bytes, size: int
    ) -> None:
        require(capabilities, "fill")
        mem = device_memory.alloc(size + 16)
        ol.olMemFill(queue, mem, pattern, size)
        ol.olSyncQueue(queue)
        assert device_memory.read(mem, size) == _expected(pattern, size)
        assert device_memory.read(mem + size, 16) == bytes(16), "olMemFill wrote past FillSize"

    @pytest.mark.parametrize(("pattern", "size"), _fills())
    def test_success_synchronous(
        self, device_memory: DeviceMemory, capabilities: Any, pattern: bytes, size: int
    ) -> None:
        require(capabilities, "fill")
        mem = device_memory.alloc(size)
        ol.olMemFill(None, mem, pattern, size)
        assert device_memory.read(mem, size) == _expected(pattern, size)

    @pytest.mark.parametrize(("pattern", "size"), _fills("32", "NonPow2", "NonPow2Small"))
    def test_success_device(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, alloc: Callable[..., int], pattern: bytes, size: int
    ) -> None:
        require(capabilities, "fill")
        require(capabilities, "copies")
        mem = alloc(size, A.DEVICE)
        out = (ctypes.c_uint8 * size)()
        ol.olMemFill(queue, mem, pattern, size)
        ol.olMemcpy(queue, ctypes.addressof(out), host_device, mem, device, size)
        ol.olSyncQueue(queue)
        assert bytes(out) == _expected(pattern, size)

    @pytest.mark.parametrize(("pattern", "size"), _fills())
    def test_success_enqueue(
        self, device_memory: DeviceMemory, capabilities: Any, queue: Any, pattern: bytes, size: int
    ) -> None:
        """The fill waits behind a blocked host task on the queue (ManuallyTriggeredTask)."""
        require(capabilities, "fill")
        require(capabilities, "host_functions")
        require(capabilities, "queued_fill")
        mem = device_memory.alloc(size)
        with BlockedQueue(queue) as task:
            ol.olMemFill(queue, mem, pattern, size)
            assert task.started.wait(10), "the host task did not start"
            assert device_memory.read(mem, size) == bytes(size), "olMemFill ran before earlier work of its queue"
            assert ol.olQueryQueue(queue) is False
            task.trigger()
        assert device_memory.read(mem, size) == _expected(pattern, size)

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
