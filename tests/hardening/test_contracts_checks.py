"""The core's checks of issue 5 against the in-process simdev backend (nothing here can crash the
interpreter: simdev records a broken rule instead of making the access): kernel argument sizes,
launch limits, device memory ranges (global variables included, validation switch or not)."""

from __future__ import annotations

import ctypes

import pytest

import offload as ol

import simdev
from contract_support import launch_size, raised

E = ol.ErrorCode
PARAMS = {"two": [[0, 8], [8, 4]], "none": [], "unknown": None}


@pytest.fixture
def kernels(sim_session):
    sim, _ = sim_session
    program = ol.olCreateProgram(sim, simdev.program(PARAMS))
    return {name: ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL) for name in PARAMS}


# --- kernel argument sizes ---------------------------------------------------------------------


@pytest.mark.parametrize("queued", [False, True])
def test_short_argument_buffers_are_refused_naming_both_sizes(sim_session, kernels, queued: bool) -> None:
    sim, _ = sim_session
    queue = ol.olCreateQueue(sim) if queued else None
    two = kernels["two"]
    for args in (b"", b"\0" * 11, bytearray(4), memoryview(b"\0" * 12)[:11]):
        error = raised(ol.olLaunchKernel, queue, sim, two, args, launch_size())
        assert error.code is E.INVALID_ARGUMENT
        assert str(len(bytes(args))) in error.details and "12" in error.details
    error = raised(ol.olLaunchKernel, queue, sim, two, None, launch_size())
    assert error.code is E.INVALID_ARGUMENT and "NULL" in error.details
    for args in (b"\0" * 12, b"\0" * 16, bytearray(64)):  # longer is fine (tail padding)
        ol.olLaunchKernel(queue, sim, two, args, launch_size())
    ol.olLaunchKernel(queue, sim, kernels["none"], None, launch_size())
    ol.olLaunchKernel(queue, sim, kernels["none"], b"", launch_size())
    ol.olLaunchKernel(queue, sim, kernels["unknown"], None, launch_size())  # unknown: not checked
    ol.olLaunchKernel(queue, sim, kernels["unknown"], b"x", launch_size())
    noncontiguous = memoryview(bytearray(32))[::2]
    assert raised(ol.olLaunchKernel, queue, sim, two, noncontiguous, launch_size()).code is E.INVALID_ARGUMENT
    if queue is not None:
        ol.olSyncQueue(queue)


class NoParamsBackend(simdev.SimBackend):
    kernel_params = None  # a backend without the hook: every kernel is "unknown"


@pytest.mark.parametrize("sim_backend", [NoParamsBackend])
def test_a_backend_without_kernel_params_is_not_checked(sim_session) -> None:
    sim, _ = sim_session
    program = ol.olCreateProgram(sim, simdev.program(PARAMS))
    kernel = ol.olGetSymbol(program, "two", ol.SymbolKind.KERNEL)
    ol.olLaunchKernel(None, sim, kernel, b"", launch_size())
    ol.olLaunchKernel(None, sim, kernel, None, launch_size())


def test_launch_limits_are_invalid_size(sim_session, kernels) -> None:
    sim, _ = sim_session
    kernel = kernels["none"]
    for groups, items in [
        ((1, 1, 1), (257, 1, 1)),  # MAX_WORK_GROUP_SIZE 256
        ((1, 1, 1), (16, 16, 2)),  # 512 items in a group
        ((1, 1, 1), (1, 129, 1)),  # per dimension y 128
        ((4097, 1, 1), (256, 1, 1)),  # MAX_WORK_SIZE_PER_DIMENSION.x 2**20
        ((1024, 65, 1), (16, 1, 1)),  # 16 * 1024 * 65 > MAX_WORK_SIZE 2**20
        ((2**32 - 1, 2**32 - 1, 2**32 - 1), (1, 1, 1)),  # more than 2**64 groups
    ]:
        error = raised(ol.olLaunchKernel, None, sim, kernel, None, launch_size(groups, items))
        assert error.code is E.INVALID_SIZE, (groups, items, error)
    ol.olLaunchKernel(None, sim, kernel, None, launch_size((4096, 1, 1), (256, 1, 1)))


def test_grids_of_2_64_groups_are_invalid_size_on_the_host(host: ol.DeviceHandle) -> None:
    from offload_host import build_test_kernel

    program = ol.olCreateProgram(host, build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    huge = ol.KernelLaunchSizeArgs(3, (2**32 - 1,) * 3, (1, 1, 1))
    assert raised(ol.olLaunchKernel, None, host, kernel, None, huge).code is E.INVALID_SIZE


# --- device memory ranges ----------------------------------------------------------------------


@pytest.mark.parametrize("queued", [False, True])
def test_device_ranges_are_checked(sim_session, queued: bool) -> None:
    sim, host = sim_session
    queue = ol.olCreateQueue(sim) if queued else None
    a = ol.olMemAlloc(sim, ol.AllocType.DEVICE, 64)
    buf = (ctypes.c_char * 128)()
    h = ctypes.addressof(buf)
    ol.olMemcpy(queue, a, sim, h, host, 64)
    ol.olMemcpy(queue, h, host, a, sim, 64)
    cases = [
        ((a, sim, h, host, 65), E.INVALID_SIZE),
        ((a + 8, sim, h, host, 57), E.INVALID_SIZE),
        ((h, host, a - 8, sim, 16), E.INVALID_SIZE),  # starts before, ends inside
        ((a - 4096, sim, h, host, 8), E.INVALID_ARGUMENT),  # never allocated
        ((h, host, a, host, 8), E.INVALID_ARGUMENT),  # device memory claimed as host memory
        ((a, sim, 0xDEAD0000, host, 8), E.INVALID_ARGUMENT),  # unmapped host source
        ((0xDEAD0000, host, a, sim, 8), E.INVALID_ARGUMENT),  # unmapped host destination
        ((a, sim, h, host, 2**64 - 1), E.INVALID_SIZE),
        ((a, sim, h, host, 2**64 + 8), E.INVALID_SIZE),
        ((a + 2**64, sim, h, host, 8), E.INVALID_ARGUMENT),
    ]
    for args, code in cases:
        error = raised(ol.olMemcpy, queue, *args)
        assert error.code is code, (args, error)
        assert error.details
    assert raised(ol.olMemFill, queue, a, b"\1", 72).code is E.INVALID_SIZE
    ol.olMemFill(queue, a, b"\1", 64)
    ol.olMemFree(a)
    assert raised(ol.olMemcpy, queue, a, sim, h, host, 8).code is E.INVALID_ARGUMENT  # freed
    assert raised(ol.olMemcpy, queue, h, host, a, sim, 8).code is E.INVALID_ARGUMENT
    if queue is not None:
        assert raised(ol.olMemFill, queue, a, b"\1", 8).code is E.INVALID_ARGUMENT
        ol.olSyncQueue(queue)


def test_global_variables_are_known_device_ranges(sim_session) -> None:
    sim, host = sim_session
    program = ol.olCreateProgram(sim, simdev.program({}, {"table": 32}))
    symbol = ol.olGetSymbol(program, "table", ol.SymbolKind.GLOBAL_VARIABLE)
    address = ol.olGetSymbolInfo(symbol, ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
    buf = (ctypes.c_char * 64)(*b"g" * 64)
    ol.olMemcpy(None, address, sim, ctypes.addressof(buf), host, 32)
    assert raised(ol.olMemcpy, None, address, sim, ctypes.addressof(buf), host, 33).code is E.INVALID_SIZE
    ol.olDestroyProgram(program)
    assert raised(ol.olMemcpy, None, address, sim, ctypes.addressof(buf), host, 8).code is E.INVALID_ARGUMENT


def test_memory_safety_does_not_depend_on_the_validation_switch(monkeypatch, sim_backend) -> None:
    monkeypatch.setenv("OFFLOAD_DISABLE_VALIDATION", "1")
    ol.register_backend("simdev", sim_backend)
    ol.olInit()
    try:
        host = next(d for d in __import__("helpers").devices() if d.platform.kind is ol.PlatformBackend.HOST)
        buf = (ctypes.c_char * 8)()
        for args in [(0, host, ctypes.addressof(buf), host, 8), (ctypes.addressof(buf), host, 0, host, 8)]:
            assert raised(ol.olMemcpy, None, *args).code is E.INVALID_ARGUMENT
        assert raised(ol.olMemFree, 0).code is E.INVALID_ARGUMENT
    finally:
        ol.olShutDown()
        ol.unregister_backend("simdev")
