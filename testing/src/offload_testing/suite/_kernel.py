"""6.10 kernel (olLaunchKernel, olCalculateOptimalOccupancy)."""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable
from typing import Any

import pytest

import offload as ol

from ._helpers import NULL_HANDLE, NULL_POINTER, Base, MultiArgs, SingleCounterArgs, global_variable, kernel, launch
from ._helpers import DeviceMemory, ptr_arg, raises, require


class _KernelBase(Base):
    @pytest.fixture(autouse=True)
    def _needs_launch(self, capabilities: Any) -> None:
        require(capabilities, "kernel_launch")

    @pytest.fixture
    def out(self, device_memory: DeviceMemory) -> int:
        """A DEVICE buffer of 256 uint32, zeroed: results are read back with ``olMemcpy``."""
        return device_memory.alloc(256 * 4)

    @pytest.fixture
    def arg(self, alloc: Callable[..., int]) -> int:
        """A DEVICE buffer of 256 uint32 for cases that only check validation (never read)."""
        return alloc(256 * 4)


class TestLaunchKernel(_KernelBase):
    @pytest.fixture
    def foo(self, load_program: Callable[[str], Any]) -> Any:
        return kernel(load_program("foo"), "foo")

    def test_foo_success(self, device_memory: DeviceMemory, device: Any, queue: Any, foo: Any, out: int) -> None:
        ol.olLaunchKernel(queue, device, foo, ptr_arg(out), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == list(range(64))

    def test_foo_success_threaded(self, device_memory: DeviceMemory, device: Any, queue: Any, foo: Any) -> None:
        """FooTest.SuccessThreaded: 20 threads launch on one shared queue."""
        buffers = [device_memory.alloc(64 * 4) for _ in range(20)]
        errors: list[BaseException] = []

        def body(i: int) -> None:
            try:
                ol.olLaunchKernel(queue, device, foo, ptr_arg(buffers[i]), launch())
                ol.olSyncQueue(queue)
                assert device_memory.u32s(buffers[i], 64) == list(range(64)), f"thread {i}: wrong data"
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=body, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "a launching thread hung"
        if errors:
            raise errors[0]

    def test_foo_success_synchronous(self, device_memory: DeviceMemory, device: Any, foo: Any, out: int) -> None:
        ol.olLaunchKernel(None, device, foo, ptr_arg(out), launch())
        assert device_memory.u32s(out, 64) == list(range(64))  # no queue: done on return

    def test_foo_many_groups(self, device_memory: DeviceMemory, device: Any, queue: Any, foo: Any, out: int) -> None:
        ol.olLaunchKernel(queue, device, foo, ptr_arg(out), launch(4, 64))
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 256) == [i % 64 for i in range(256)]

    def test_args_buffer_reusable(self, device_memory: DeviceMemory, device: Any, queue: Any, foo: Any) -> None:
        """The argument bytes are copied at launch: a reused buffer must not change queued launches."""
        first, second = device_memory.alloc(64 * 4), device_memory.alloc(64 * 4)
        args = bytearray(ptr_arg(first))
        ol.olLaunchKernel(queue, device, foo, args, launch())
        args[:] = ptr_arg(second)
        ol.olSyncQueue(queue)
        assert device_memory.u32s(first, 64) == list(range(64))
        assert device_memory.u32s(second, 64) == [0] * 64

    def test_bar_same_kernel_name(
        self, device_memory: DeviceMemory, device: Any, queue: Any, foo: Any, load_program: Callable[[str], Any]
    ) -> None:
        """bar exports a different kernel also named foo: each program runs its own."""
        bar = kernel(load_program("bar"), "foo")
        a, b = device_memory.alloc(64 * 4), device_memory.alloc(64 * 4)
        ol.olLaunchKernel(queue, device, foo, ptr_arg(a), launch())
        ol.olLaunchKernel(queue, device, bar, ptr_arg(b), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(a, 64) == list(range(64))
        assert device_memory.u32s(b, 64) == [i + 1 for i in range(64)]

    def test_noargs_success(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        """noargs has nothing to write: it runs in queue order (a foo launch after it lands)."""
        foo = kernel(load_program("foo"), "foo")
        ol.olLaunchKernel(queue, device, kernel(load_program("noargs"), "noargs"), None, launch())
        ol.olLaunchKernel(queue, device, foo, ptr_arg(out), launch())
        ol.olSyncQueue(queue)
        assert ol.olQueryQueue(queue) is True and device_memory.u32s(out, 64) == list(range(64))

    def test_multiargs_success(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        """multiargs(char A, int *B, short C) writes A + C to B[0]: every argument arrived."""
        args = MultiArgs(b"\x01", out, 2)
        ol.olLaunchKernel(queue, device, kernel(load_program("multiargs"), "multiargs"), bytes(args), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 2) == [3, 0], "multiargs did not get its three arguments"
        ol.olLaunchKernel(queue, device, kernel(load_program("multiargs"), "multiargs"), bytes(MultiArgs(b"\x7f", out, -100)), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 1) == [27]

    def test_byte_success(
        self, device: Any, host_device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any]
    ) -> None:
        """byte(unsigned char c) stores c in its global ``byte_seen``: the one-byte struct arrived
        (seen with ``globals``; without, the launch itself is the test)."""
        program = load_program("byte")
        ol.olLaunchKernel(queue, device, kernel(program, "byte"), struct.pack("B", 0x42), launch())
        ol.olSyncQueue(queue)
        if not capabilities.globals:
            return
        seen = ol.olGetSymbolInfo(global_variable(program, "byte_seen"), ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
        value = ctypes.c_uint32(0)
        ol.olMemcpy(None, ctypes.addressof(value), host_device, seen, device, 4)
        assert value.value == 0x42

    def test_localmem_success(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        localmem = kernel(load_program("localmem"), "localmem")
        ol.olLaunchKernel(queue, device, localmem, ptr_arg(out), launch(4, 64, 64 * 4))
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 256) == [(i % 64) * 2 for i in range(256)]

    def test_localmem_reduction_success(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        reduction = kernel(load_program("localmem_reduction"), "localmem_reduction")
        ol.olLaunchKernel(queue, device, reduction, ptr_arg(out), launch(4, 64, 64 * 4))
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 4) == [2 * 64] * 4

    def test_localmem_static_success(
        self, device_memory: DeviceMemory, device: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        static = kernel(load_program("localmem_static"), "localmem_static")
        ol.olLaunchKernel(queue, device, static, ptr_arg(out), launch(4, 64))
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 4) == [2 * 64] * 4

    def test_global_success(
        self, device_memory: DeviceMemory, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        require(capabilities, "globals")
        program = load_program("global")
        ol.olLaunchKernel(queue, device, kernel(program, "write"), None, launch())
        ol.olLaunchKernel(queue, device, kernel(program, "read"), ptr_arg(out), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == [i * 2 for i in range(64)]

    def test_global_invalid_not_a_kernel(
        self, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any]
    ) -> None:
        require(capabilities, "globals")
        symbol = global_variable(load_program("global"), "global")
        with raises(ol.ErrorCode.SYMBOL_KIND):
            ol.olLaunchKernel(queue, device, symbol, None, launch())

    def test_global_ctor_success(
        self, device_memory: DeviceMemory, device: Any, capabilities: Any, queue: Any, load_program: Callable[[str], Any], out: int
    ) -> None:
        require(capabilities, "constructors")
        ctor = kernel(load_program("global_ctor"), "global_ctor")
        ol.olLaunchKernel(queue, device, ctor, ptr_arg(out), launch())
        ol.olSyncQueue(queue)
        assert device_memory.u32s(out, 64) == [i + 100 for i in range(64)]

    def test_global_dtor_success(
        self, device: Any, capabilities: Any, queue: Any, program_binary: Callable[[str], bytes]
    ) -> None:
        require(capabilities, "constructors")
        program = ol.olCreateProgram(device, program_binary("global_dtor"))
        ol.olLaunchKernel(queue, device, kernel(program, "global_dtor"), None, launch())
        ol.olSyncQueue(queue)
        ol.olDestroyProgram(program)  # runs the destructor: must not crash

    def test_global_dtor_runs(
        self,
        device_memory: DeviceMemory,
        device: Any,
        host_device: Any,
        capabilities: Any,
        queue: Any,
        program_binary: Callable[[str], bytes],
    ) -> None:
        """With ``dtor_out``: the destructor writes 64 ones where ``dtor_out`` points."""
        require(capabilities, "constructors")
        require(capabilities, "globals")
        require(capabilities, "dtor_out")
        program = ol.olCreateProgram(device, program_binary("global_dtor"))
        destroyed = False
        try:
            seen = device_memory.alloc(64 * 4)
            dtor_out = ol.olGetSymbolInfo(
                global_variable(program, "dtor_out"), ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS
            )
            pointer = ctypes.c_uint64(seen)
            ol.olMemcpy(None, dtor_out, device, ctypes.addressof(pointer), host_device, 8)
            ol.olLaunchKernel(queue, device, kernel(program, "global_dtor"), None, launch())
            ol.olSyncQueue(queue)
            assert device_memory.u32s(seen, 64) == [0] * 64, "the destructor ran before olDestroyProgram"
            ol.olDestroyProgram(program)
            destroyed = True
            assert device_memory.u32s(seen, 64) == [1] * 64, "olDestroyProgram did not run the program's destructor"
        finally:
            if not destroyed:
                ol.olDestroyProgram(program)

    @pytest.mark.parametrize(
        ("groups", "size"),
        [((0, 1, 1), (64, 1, 1)), ((1, 0, 1), (64, 1, 1)), ((1, 1, 1), (0, 1, 1)), ((1, 1, 1), (64, 1, 0))],
        ids=["NumGroups.x", "NumGroups.y", "GroupSize.x", "GroupSize.z"],
    )
    def test_invalid_zero_extent(self, device: Any, queue: Any, foo: Any, arg: int, groups: Any, size: Any) -> None:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olLaunchKernel(queue, device, foo, ptr_arg(arg), ol.KernelLaunchSizeArgs(1, groups, size, 0))

    def test_invalid_null_device(self, queue: Any, foo: Any, arg: int) -> None:
        with raises(NULL_HANDLE):
            ol.olLaunchKernel(queue, None, foo, ptr_arg(arg), launch())

    def test_invalid_null_kernel(self, device: Any, queue: Any, arg: int) -> None:
        with raises(NULL_HANDLE):
            ol.olLaunchKernel(queue, device, None, ptr_arg(arg), launch())

    def test_invalid_null_launch_args(self, device: Any, queue: Any, foo: Any, arg: int) -> None:
        with raises(NULL_POINTER):
            ol.olLaunchKernel(queue, device, foo, ptr_arg(arg), None)

    def test_invalid_queue_of_another_device(self, device: Any, ol_session: list[Any], foo: Any, arg: int) -> None:
        others = [d for d in ol_session if d is not device]
        if not others:
            pytest.skip("needs a second device: this session has only the device under test")
        queue = ol.olCreateQueue(others[0])
        try:
            with raises(ol.ErrorCode.INVALID_DEVICE):
                ol.olLaunchKernel(queue, device, foo, ptr_arg(arg), launch())
        finally:
            ol.olDestroyQueue(queue)


_INIT_LOOP = 1_000_000
_ADDEND = 2


class TestSingleCounter(_KernelBase):
    """SingleCounterSyncEventTest: a slow single-item kernel, then a copy and an event."""

    @pytest.fixture
    def counter(self, load_program: Callable[[str], Any]) -> Any:
        return kernel(load_program("single_counter"), "single_counter")

    @pytest.fixture
    def init(self, device_memory: DeviceMemory) -> int:
        """The first count's starting value: a uint32 0."""
        address = device_memory.alloc(4)
        return address

    @staticmethod
    def _count(queue: Any, device: Any, counter: Any, start: int, result: int) -> None:
        """Enqueue the slow count from ``*start`` into ``*result`` (one item)."""
        args = SingleCounterArgs(_INIT_LOOP, _ADDEND, start, result)
        ol.olLaunchKernel(queue, device, counter, bytes(args), launch(1, 1))

    def test_success_sync_event(
        self, device: Any, host_device: Any, queue: Any, counter: Any, init: int, alloc: Callable[..., int]
    ) -> None:
        result = alloc(4, ol.AllocType.DEVICE)
        host = ctypes.c_uint32(0)
        self._count(queue, device, counter, init, result)
        ol.olMemcpy(queue, ctypes.addressof(host), host_device, result, device, 4)
        event = ol.olCreateEvent(queue)
        ol.olSyncEvent(event)
        assert host.value == _INIT_LOOP * _ADDEND
        ol.olDestroyEvent(event)

    def test_success_two_queues(
        self, device: Any, host_device: Any, queue: Any, counter: Any, init: int, alloc: Callable[..., int]
    ) -> None:
        middle = alloc(4, ol.AllocType.DEVICE)
        result = alloc(4, ol.AllocType.DEVICE)
        host = ctypes.c_uint32(0)
        second = ol.olCreateQueue(device)
        try:
            self._count(queue, device, counter, init, middle)
            first_done = ol.olCreateEvent(queue)
            ol.olWaitEvents(second, [first_done])
            self._count(second, device, counter, middle, result)
            ol.olMemcpy(second, ctypes.addressof(host), host_device, result, device, 4)
            second_done = ol.olCreateEvent(second)
            ol.olSyncEvent(second_done)
            assert host.value == 2 * _INIT_LOOP * _ADDEND
            ol.olDestroyEvent(first_done)
            ol.olDestroyEvent(second_done)
        finally:
            ol.olSyncQueue(second)
            ol.olDestroyQueue(second)


class TestOccupancy(Base):
    @pytest.fixture
    def foo(self, load_program: Callable[[str], Any]) -> Any:
        return kernel(load_program("foo"), "foo")

    @pytest.mark.parametrize("shared", [0, 1024], ids=["Success", "SuccessMem"])
    def test_success(self, device: Any, capabilities: Any, foo: Any, shared: int) -> None:
        require(capabilities, "occupancy")
        size = ol.olCalculateOptimalOccupancy(device, foo, shared)
        assert type(size) is int and size > 0

    def test_null_kernel(self, device: Any) -> None:
        with raises(NULL_HANDLE):
            ol.olCalculateOptimalOccupancy(device, None, 0)

    def test_null_device(self, foo: Any) -> None:
        with raises(NULL_HANDLE):
            ol.olCalculateOptimalOccupancy(None, foo, 0)

    def test_not_a_kernel(self, device: Any, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        require(capabilities, "globals")
        symbol = global_variable(load_program("global"), "global")
        with raises(ol.ErrorCode.SYMBOL_KIND):
            ol.olCalculateOptimalOccupancy(device, symbol, 0)


#: The parameters of the test programs' kernels: (program, kernel) -> [(offset, size)].
_PARAMS = {
    ("foo", "foo"): [(0, 8)],
    ("noargs", "noargs"): [],
    ("byte", "byte"): [(0, 1)],
    ("multiargs", "multiargs"): [(0, 1), (8, 8), (16, 2)],
    ("sequence", "sequence"): [(0, 4), (8, 8)],
    ("single_counter", "single_counter"): [(0, 4), (4, 4), (8, 8), (16, 8)],
}


class TestKernelParams(Base):
    """The ``kernel_params`` hook (the core checks argument sizes with it) describes each test
    kernel's packed argument struct: offsets and sizes as the C compiler lays them out. Read
    through ``olGetKernelParamsExt``, the flat API's (offload's extension) query of it."""

    @pytest.mark.parametrize(("program", "name"), list(_PARAMS), ids=[p for p, _ in _PARAMS])
    def test_layout(
        self, device: Any, capabilities: Any, load_program: Callable[[str], Any], program: str, name: str
    ) -> None:
        require(capabilities, "kernel_params")
        symbol = kernel(load_program(program), name)
        params = ol.olGetKernelParamsExt(symbol)
        if params is None:
            pytest.skip(f"kernel_params answers None for {name!r}: the image does not describe its parameters")
        assert [(p.offset, p.size) for p in params] == _PARAMS[(program, name)]
        for param in params:
            assert isinstance(param, ol.KernelParam), f"{param!r} is not an offload.KernelParam"
            assert param.kind in ("pointer", "int", "uint", "float", "bytes"), param
        if program in ("foo", "sequence", "single_counter"):
            assert params[-1].kind in ("pointer", "bytes"), f"the last parameter of {name} is a pointer: {params}"

    def test_not_a_kernel(self, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        require(capabilities, "globals")
        with raises(ol.ErrorCode.SYMBOL_KIND):
            ol.olGetKernelParamsExt(global_variable(load_program("global"), "global"))

    def test_invalid_null_kernel(self) -> None:
        with raises(NULL_HANDLE):
            ol.olGetKernelParamsExt(None)
