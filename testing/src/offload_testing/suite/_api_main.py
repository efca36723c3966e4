"""liboffload main's other additions: olIteratePlatforms, olIterateCompatibleDevices,
olIterateSymbols, olGetKernelMaxCooperativeGroupCount with cooperative launches, event flags,
per-argument launches, symbol names, and the refused olPlatformRegisterRPCCallback."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import (
    NULL_HANDLE,
    NULL_POINTER,
    Base,
    expect_unsupported,
    kernel,
    launch,
    ptr_arg,
    raises,
    require,
    symbol_name,
)
from ._helpers import DeviceMemory


class TestIteratePlatforms(Base):
    def test_success(self, device: Any) -> None:
        seen: list[Any] = []
        ol.olIteratePlatforms(lambda p, u: u.append(p) or True, seen)
        assert ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM) in seen
        assert all(isinstance(p, ol.Platform) for p in seen) and len(set(map(id, seen))) == len(seen)

    def test_stops(self) -> None:
        seen: list[Any] = []
        ol.olIteratePlatforms(lambda p, u: u.append(p) and False, seen)
        assert len(seen) == 1

    def test_success_empty_callback(self) -> None:
        """olIteratePlatformsTest.SuccessEmptyCallback."""
        ol.olIteratePlatforms(lambda p, u: False, None)

    def test_success_get_platform(self) -> None:
        """olIteratePlatformsTest.SuccessGetPlatform: count them, then keep the last one seen."""
        count = [0]
        ol.olIteratePlatforms(lambda p, u: u.__setitem__(0, u[0] + 1) or True, count)
        if count[0] == 0:
            pytest.skip("no available platforms")
        last: list[Any] = [None]
        ol.olIteratePlatforms(lambda p, u: u.__setitem__(0, p) or True, last)
        assert last[0] is not None

    def test_rpc_callback_refused(self, device: Any) -> None:
        platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
        with raises(ol.ErrorCode.UNSUPPORTED) as info:
            ol.olPlatformRegisterRPCCallback(platform, _no_rpc)
        assert "RPC" in info.value.details


class TestIterateCompatibleDevices(Base):
    def test_success(self, device: Any, capabilities: Any, program_binary: Callable[[str], bytes]) -> None:
        require(capabilities, "programs")
        seen: list[Any] = []
        ol.olIterateCompatibleDevices(program_binary("foo"), lambda d, u: u.append(d) or True, seen)
        assert device in seen
        for found in seen:
            assert ol.olIsValidBinary(found, program_binary("foo"))

    def test_success_stop_iteration(self, program_binary: Callable[[str], bytes]) -> None:
        """olIterateCompatibleDevicesTest.SuccessStopIteration."""
        calls = [0]
        ol.olIterateCompatibleDevices(program_binary("foo"), lambda d, u: u.__setitem__(0, u[0] + 1) and False, calls)
        assert calls[0] == 1

    def test_empty_binary(self, program_binary: Callable[[str], bytes]) -> None:
        """olIterateCompatibleDevicesTest.EmptyBinary: the binary's first 0 bytes fit no device."""
        program_binary("foo")  # (skips as Success does where the backend has no test programs)
        calls = [0]
        ol.olIterateCompatibleDevices(b"", lambda d, u: u.__setitem__(0, u[0] + 1) or True, calls)
        assert calls[0] == 0

    def test_garbage(self) -> None:
        seen: list[Any] = []
        ol.olIterateCompatibleDevices(b"\x00garbage" * 8, lambda d, u: u.append(d) or True, seen)
        assert seen == []


class TestIterateSymbols(Base):
    @pytest.fixture(autouse=True)
    def _needs_symbols(self, capabilities: Any) -> None:
        require(capabilities, "iterate_symbols")

    def test_kernels(self, load_program: Callable[[str], Any]) -> None:
        program = load_program("foo")
        seen: list[Any] = []
        ol.olIterateSymbols(program, ol.SymbolKind.KERNEL, lambda s, u: u.append(s) or True, seen)
        assert kernel(program, "foo") in seen
        assert all(ol.olGetSymbolInfo(s, ol.SymbolInfo.KIND) is ol.SymbolKind.KERNEL for s in seen)
        assert "foo" in [ol.olGetSymbolInfo(s, ol.SymbolInfo.NAME) for s in seen]

    def test_globals(self, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        """Global variables are listed, or refused (UNSUPPORTED naming them) by a driver that has
        no call listing them (CUDA's). A platform without globals has none to list."""
        require(capabilities, "globals")
        program = load_program("global")
        names: list[str] = []
        try:
            ol.olIterateSymbols(
                program, ol.SymbolKind.GLOBAL_VARIABLE, lambda s, u: u.append(ol.olGetSymbolInfo(s, ol.SymbolInfo.NAME)) or True, names
            )
        except ol.OffloadError as exc:
            assert exc.code is ol.ErrorCode.UNSUPPORTED and "global variables" in exc.details, exc
            return
        assert "global" in names

    def test_stops(self, load_program: Callable[[str], Any]) -> None:
        seen: list[Any] = []
        ol.olIterateSymbols(load_program("foo"), ol.SymbolKind.KERNEL, lambda s, u: u.append(s) and False, seen)
        assert len(seen) == 1

    def test_invalid_kind(self, load_program: Callable[[str], Any]) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olIterateSymbols(load_program("foo"), 0x7FFFFFFF, lambda s, u: True, None)

    # olIterateSymbols.cpp, case by case: upstream's "global" program (kernels read and write,
    # the global variable global), which a platform without global variables does not have

    @pytest.fixture
    def global_program(self, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        require(capabilities, "globals")
        return load_program("global")

    def test_success_kernels(self, global_program: Any) -> None:
        program = global_program
        names = _names(program, ol.SymbolKind.KERNEL)
        assert symbol_name(program, "read") in names and symbol_name(program, "write") in names

    def test_success_same_symbol(self, global_program: Any) -> None:
        program = global_program
        seen: list[Any] = []
        ol.olIterateSymbols(program, ol.SymbolKind.KERNEL, lambda s, u: u.append(s) or True, seen)
        assert seen
        for symbol in seen:
            assert ol.olGetSymbol(program, ol.olGetSymbolInfo(symbol, ol.SymbolInfo.NAME), ol.SymbolKind.KERNEL) is symbol

    def test_success_stop_iteration(self, global_program: Any) -> None:
        """Two kernels, the callback says stop at the first: called once."""
        calls = [0]
        ol.olIterateSymbols(global_program, ol.SymbolKind.KERNEL, lambda s, u: u.__setitem__(0, u[0] + 1) and False, calls)
        assert calls[0] == 1

    def test_invalid_null_program(self) -> None:
        with raises(NULL_HANDLE):
            ol.olIterateSymbols(None, ol.SymbolKind.KERNEL, lambda s, u: True, None)

    def test_invalid_null_callback(self, load_program: Callable[[str], Any]) -> None:
        with raises(NULL_POINTER):
            ol.olIterateSymbols(load_program("foo"), ol.SymbolKind.KERNEL, None, None)


def _names(program: Any, kind: Any) -> list[str]:
    """upstream's getNames: every symbol of ``kind``, checked to be of that kind, by name."""
    seen: list[Any] = []
    ol.olIterateSymbols(program, kind, lambda s, u: u.append(s) or True, seen)
    assert all(ol.olGetSymbolInfo(s, ol.SymbolInfo.KIND) is kind for s in seen)
    return [ol.olGetSymbolInfo(s, ol.SymbolInfo.NAME) for s in seen]


class TestSymbolName(Base):
    def test_kernel_name(self, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        require(capabilities, "kernel_launch")
        symbol = kernel(load_program("foo"), "foo")
        assert ol.olGetSymbolInfo(symbol, ol.SymbolInfo.NAME) == "foo"
        assert ol.olGetSymbolInfoSize(symbol, ol.SymbolInfo.NAME) == 4


class TestLaunchPerArgument(Base):
    @pytest.fixture(autouse=True)
    def _needs_launch(self, capabilities: Any) -> None:
        require(capabilities, "kernel_launch")

    def test_foo(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any]
    ) -> None:
        out = device_memory.alloc(64 * 4)
        foo = kernel(load_program("foo"), "foo")
        ol.olLaunchKernel(queue, device, foo, [ctypes.c_void_p(out)], launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == list(range(64))

    def test_main_argument_order(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any]
    ) -> None:
        out = device_memory.alloc(64 * 4)
        foo = kernel(load_program("foo"), "foo")
        ol.olLaunchKernel(queue, device, foo, launch(), None, [ctypes.c_void_p(out)])
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == list(range(64))

    def test_wrong_count(self, device: Any, queue: Any, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        require(capabilities, "kernel_params")
        foo = kernel(load_program("foo"), "foo")
        with raises(ol.ErrorCode.INVALID_ARGUMENT):
            ol.olLaunchKernel(queue, device, foo, [ctypes.c_void_p(0), ctypes.c_void_p(0)], launch())

    def test_wrong_size(self, device: Any, queue: Any, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        require(capabilities, "kernel_params")
        foo = kernel(load_program("foo"), "foo")
        with raises(ol.ErrorCode.INVALID_ARGUMENT):
            ol.olLaunchKernel(queue, device, foo, [ctypes.c_uint32(0)], launch())

    def test_unknown_property(
        self, device: Any, queue: Any, load_program: Callable[[str], Any], alloc: Callable[..., int]
    ) -> None:
        foo = kernel(load_program("foo"), "foo")
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olLaunchKernel(queue, device, foo, ptr_arg(alloc(256)), launch(), {0x7FFFFFFF: True})


class TestCooperativeLaunch(Base):
    @pytest.fixture
    def foo(self, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        require(capabilities, "kernel_launch")
        return kernel(load_program("foo"), "foo")

    def test_max_group_count(self, device: Any, capabilities: Any, foo: Any) -> None:
        if not capabilities.cooperative_launch:
            expect_unsupported(device, ["max_cooperative_groups"], ol.olGetKernelMaxCooperativeGroupCount, device, foo, launch())
            assert ol.olGetDeviceInfo(device, ol.DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT) is False
            return
        assert ol.olGetDeviceInfo(device, ol.DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT) is True
        assert ol.olGetKernelMaxCooperativeGroupCount(device, foo, launch()) >= 1

    def test_cooperative_foo(
        self, device_memory: DeviceMemory, device: Any, queue: Any, capabilities: Any, foo: Any
    ) -> None:
        out = device_memory.alloc(64 * 4)
        props = {ol.KernelLaunchPropType.IS_COOPERATIVE: True}
        if not capabilities.cooperative_launch:
            expect_unsupported(device, ["launch_kernel_cooperative"], ol.olLaunchKernel, queue, device, foo, ptr_arg(out), launch(), props)
            return
        ol.olLaunchKernel(queue, device, foo, ptr_arg(out), launch(), props)
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == list(range(64))

    def test_too_many_groups(
        self, device: Any, queue: Any, capabilities: Any, foo: Any, alloc: Callable[..., int]
    ) -> None:
        require(capabilities, "cooperative_launch")
        limit = ol.olGetKernelMaxCooperativeGroupCount(device, foo, launch())
        size = ol.olGetDeviceInfo(device, ol.DeviceInfo.MAX_WORK_SIZE)
        if (limit + 1) * 64 > size:
            pytest.skip("the device's grid limit is reached first")
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olLaunchKernel(queue, device, foo, ptr_arg(alloc(4)), launch(groups=limit + 1), {ol.KernelLaunchPropType.IS_COOPERATIVE: True})


class TestLaunchKernelCooperative(Base):
    """olLaunchKernelCooperativeTest, case by case: the ``noargs`` kernel, 64 items a group;
    devices without COOPERATIVE_LAUNCH_SUPPORT skip (upstream's SetUp), naming the flag."""

    @pytest.fixture
    def noargs(self, device: Any, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        require(capabilities, "kernel_launch")
        require(capabilities, "cooperative_launch")
        assert ol.olGetDeviceInfo(device, ol.DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT) is True
        return kernel(load_program("noargs"), "noargs")

    def test_get_max_cooperative_group_count(self, device: Any, noargs: Any) -> None:
        assert ol.olGetKernelMaxCooperativeGroupCount(device, noargs, launch()) > 0

    def test_success_cooperative(self, device: Any, queue: Any, noargs: Any) -> None:
        most = ol.olGetKernelMaxCooperativeGroupCount(device, noargs, launch())
        ol.olLaunchKernel(queue, device, noargs, None, launch(groups=most), _COOPERATIVE)
        ol.olSyncQueue(queue)

    def test_success_non_cooperative(self, device: Any, queue: Any, noargs: Any) -> None:
        ol.olLaunchKernel(queue, device, noargs, None, launch(), None)
        ol.olSyncQueue(queue)

    def test_too_many_groups(self, device: Any, queue: Any, noargs: Any) -> None:
        """Twice the most groups: refused (upstream: any error)."""
        most = ol.olGetKernelMaxCooperativeGroupCount(device, noargs, launch())
        with pytest.raises(ol.OffloadError):
            ol.olLaunchKernel(queue, device, noargs, None, launch(groups=most * 2), _COOPERATIVE)

    def test_synchronous_launch(self, device: Any, noargs: Any) -> None:
        most = ol.olGetKernelMaxCooperativeGroupCount(device, noargs, launch())
        ol.olLaunchKernel(None, device, noargs, None, launch(groups=min(most, 2)), _COOPERATIVE)

    def test_invalid_null_handle_kernel(self, device: Any, noargs: Any) -> None:
        with raises(NULL_HANDLE):
            ol.olGetKernelMaxCooperativeGroupCount(device, None, launch())

    def test_invalid_null_handle_device(self, noargs: Any) -> None:
        with raises(NULL_HANDLE):
            ol.olGetKernelMaxCooperativeGroupCount(None, noargs, launch())


_COOPERATIVE = {ol.KernelLaunchPropType.IS_COOPERATIVE: True}


class TestEventFlags(Base):
    def test_profiling_flag(self, queue: Any, capabilities: Any) -> None:
        require(capabilities, "events")
        start = ol.olCreateEvent(queue, ol.EventFlags.ENABLE_PROFILING)
        end = ol.olCreateEvent(queue, ol.EventFlags.ENABLE_PROFILING)
        ol.olSyncEvent(end)
        if capabilities.events_elapsed_time:
            assert ol.olGetEventElapsedTime(start, end) >= 0.0
        ol.olDestroyEvent(start)
        ol.olDestroyEvent(end)

    def test_invalid_flags(self, queue: Any, capabilities: Any) -> None:
        require(capabilities, "events")
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olCreateEvent(queue, 0x7FFFFFFF)


def _no_rpc(port: Any, lanes: Any) -> int:
    return 0
