"""Absent features: each optional feature the capabilities leave off must answer
``OL_ERRC_UNSUPPORTED`` (from the core, naming the backend and the hook, when the hook is missing;
from the backend's own hook when it is there but the feature is limited), never crash or succeed.
A present feature skips here: its own test class tests it."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import offload as ol
from offload.testing import capabilities_for
from offload.testing._capabilities import FEATURES, contradictions, partial_groups

from ._helpers import Base, expect_unsupported, implemented, kernel, launch, ptr_arg, require, symbol_name

A = ol.AllocType
_FAKE_ADDRESS = 0x1000  # a non-null address: the core must refuse before any backend touches it


class TestCapabilities(Base):
    def test_declarations_match_hooks(self, device: Any, capabilities: Any) -> None:
        """A flag declared True needs its hooks (and the flags it builds on)."""
        declared = capabilities_for(device.platform.name)
        assert contradictions(declared, implemented(device)) == []

    def test_hook_groups_are_whole(self, device: Any) -> None:
        """A group's hooks come together (hookspecs): a part of one leaves the feature absent."""
        assert partial_groups(implemented(device)) == []

    def test_every_flag_resolved(self, capabilities: Any) -> None:
        for feature in FEATURES:
            assert type(getattr(capabilities, feature.flag)) is bool, feature.flag


def _absent(capabilities: Any, flag: str) -> None:
    """Skip (naming the flag) when the feature is present: its own tests cover it."""
    if getattr(capabilities, flag):
        pytest.skip(f"{capabilities!r}: capabilities.{flag} is True (the feature is tested, not its absence)")


class TestAbsentFeatures(Base):
    @pytest.fixture
    def address(self, device: Any, capabilities: Any) -> Iterator[int]:
        """Device memory when there is any, else an address the core must refuse to use."""
        if not capabilities.memory:
            yield _FAKE_ADDRESS
            return
        base = ol.olMemAlloc(device, A.DEVICE, 64)
        yield base
        ol.olMemFree(base)

    @pytest.fixture
    def kernel_symbol(self, capabilities: Any, load_program: Callable[[str], Any]) -> Any:
        """The kernel ``foo`` of the ``foo`` program."""
        require(capabilities, "kernel_launch")
        return kernel(load_program("foo"), "foo")

    def test_memory(self, device: Any, capabilities: Any) -> None:
        _absent(capabilities, "memory")
        expect_unsupported(device, ["mem_alloc"], ol.olMemAlloc, device, A.DEVICE, 64)

    @pytest.mark.parametrize(("flag", "alloc_type"), [("managed_memory", A.MANAGED), ("host_memory", A.HOST)])
    def test_alloc_kind(self, device: Any, capabilities: Any, flag: str, alloc_type: Any) -> None:
        _absent(capabilities, flag)
        expect_unsupported(device, ["mem_alloc"], ol.olMemAlloc, device, alloc_type, 64)

    def test_copies(self, device: Any, host_device: Any, capabilities: Any, address: int) -> None:
        _absent(capabilities, "copies")
        buffer = (ctypes.c_uint8 * 64)()
        host = ctypes.addressof(buffer)
        expect_unsupported(device, ["data_submit"], ol.olMemcpy, None, address, device, host, host_device, 64)
        expect_unsupported(device, ["data_retrieve"], ol.olMemcpy, None, host, host_device, address, device, 64)

    def test_device_to_device(self, device: Any, capabilities: Any, address: int) -> None:
        _absent(capabilities, "device_to_device")
        hooks = ["data_exchange", "data_retrieve", "data_submit"]
        expect_unsupported(device, hooks, ol.olMemcpy, None, address + 32, device, address, device, 32)

    def test_fill(self, device: Any, capabilities: Any, address: int) -> None:
        _absent(capabilities, "fill")
        if capabilities.memory:
            expect_unsupported(device, ["data_fill"], ol.olMemFill, None, address, b"\x01", 16)
        if capabilities.queues:
            queue = ol.olCreateQueue(device)
            try:
                expect_unsupported(device, ["data_fill"], ol.olMemFill, queue, address, b"\x01", 16)
            finally:
                ol.olDestroyQueue(queue)
        if not (capabilities.memory or capabilities.queues):
            pytest.skip(f"{capabilities!r}: olMemFill needs an allocation or a queue: {capabilities.why_absent('memory')}")

    def test_mem_register(self, device: Any, capabilities: Any) -> None:
        _absent(capabilities, "mem_register")
        buffer = (ctypes.c_uint8 * 4096)()
        host = ctypes.addressof(buffer)
        expect_unsupported(device, ["mem_register"], ol.olMemRegister, device, host, 4096, 0)
        expect_unsupported(device, ["mem_unregister"], ol.olMemUnregister, device, host, 0)

    def test_queues(self, device: Any, capabilities: Any) -> None:
        _absent(capabilities, "queues")
        expect_unsupported(device, ["create_queue"], ol.olCreateQueue, device)

    def test_host_functions(self, device: Any, capabilities: Any, queue: Any) -> None:
        _absent(capabilities, "host_functions")
        ran: list[Any] = []
        expect_unsupported(device, ["enqueue_host_call"], ol.olLaunchHostFunction, queue, ran.append, 1)
        ol.olSyncQueue(queue)
        assert ran == [], "a refused host function ran anyway"

    def test_events(self, device: Any, capabilities: Any, queue: Any) -> None:
        _absent(capabilities, "events")
        expect_unsupported(device, ["create_event"], ol.olCreateEvent, queue)
        ol.olWaitEvents(queue, [])  # waiting on nothing needs no event hook
        ol.olSyncQueue(queue)

    def test_events_elapsed_time(self, device: Any, capabilities: Any, queue: Any) -> None:
        _absent(capabilities, "events_elapsed_time")
        require(capabilities, "events")
        start = ol.olCreateEvent(queue)
        end = ol.olCreateEvent(queue)
        try:
            ol.olSyncEvent(end)
            expect_unsupported(device, ["event_elapsed_time"], ol.olGetEventElapsedTime, start, end)
        finally:
            ol.olDestroyEvent(start)
            ol.olDestroyEvent(end)

    def test_programs(self, device: Any, capabilities: Any) -> None:
        """No program to take symbols from: the backend loads no image, and the kit asks none."""
        _absent(capabilities, "programs")
        assert ol.olIsValidBinary(device, b"\x7fELF" + bytes(60)) is False
        with pytest.raises(ol.OffloadError) as info:
            ol.olCreateProgram(device, b"\x7fELF" + bytes(60))
        assert info.value.code in (ol.ErrorCode.INVALID_BINARY, ol.ErrorCode.UNSUPPORTED), info.value

    def test_kernel_launch(self, device: Any, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        _absent(capabilities, "kernel_launch")
        program = load_program("foo")
        if "get_kernel" not in implemented(device):
            expect_unsupported(device, ["get_kernel"], ol.olGetSymbol, program, "foo", ol.SymbolKind.KERNEL)
            return
        foo = kernel(program, "foo")
        expect_unsupported(device, ["launch_kernel"], ol.olLaunchKernel, None, device, foo, ptr_arg(0), launch())

    def test_occupancy(self, device: Any, capabilities: Any, kernel_symbol: Any) -> None:
        _absent(capabilities, "occupancy")
        expect_unsupported(device, ["max_group_size"], ol.olCalculateOptimalOccupancy, device, kernel_symbol, 0)

    def test_globals(self, device: Any, capabilities: Any, load_program: Callable[[str], Any]) -> None:
        """No global variables: asking for one (even by a kernel's name) answers UNSUPPORTED."""
        _absent(capabilities, "globals")
        require(capabilities, "programs")
        program = load_program("foo")
        expect_unsupported(
            device, ["get_global"], ol.olGetSymbol, program, symbol_name(program, "foo"), ol.SymbolKind.GLOBAL_VARIABLE
        )
