"""Issue 17: liboffload main's API beside R1. The API level chosen at olInit (``r1`` by default,
``main`` opt-in) switches numbering, trace spelling and the few semantic differences; each is
checked at both levels here. R1 callers keep working unchanged (the rest of the suite)."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload_host import HostBackend

from helpers import devices

A = ol.AllocType


@pytest.fixture(params=["r1", "main"])
def level(request: pytest.FixtureRequest) -> Iterator[str]:
    ol.olInit(ol.InitArgs(api_level=request.param))
    try:
        yield request.param
    finally:
        ol.olShutDown()


@pytest.fixture
def host(level: str) -> Any:
    return next(d for d in devices() if d.platform.kind is ol.PlatformBackend.HOST)


# --- numbering -------------------------------------------------------------------------------


def test_c_numbers_per_level() -> None:
    r1, main = ol.c_constants("r1"), ol.c_constants("main")
    assert (r1["OL_ERRC_SYMBOL_KIND"], main["OL_ERRC_SYMBOL_KIND"]) == (24, 25)
    assert main["OL_ERRC_INVALID_CONTEXT"] == 24 and main["OL_ERRC_INVALID_EVENT"] == 23
    assert (r1["OL_QUEUE_INFO_EMPTY"], main["OL_QUEUE_INFO_EMPTY"], main["OL_QUEUE_INFO_CONTEXT"]) == (1, 2, 1)
    assert main["OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT"] == 33 and main["OL_DEVICE_INFO_DRIVER_ID"] == 34
    assert (r1["OL_DEVICE_INFO_LAST"], main["OL_DEVICE_INFO_LAST"]) == (33, 35)
    assert main["OL_SYMBOL_INFO_NAME"] == 3 and main["OL_CONTEXT_INFO_PLATFORM"] == 2
    assert main["OL_EVENT_FLAGS_ENABLE_PROFILING"] == 1 and main["OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE"] == 1
    assert main["OL_EVENT_FLAGS_NONE"] == 0 and ol.OL_EVENT_FLAGS_NONE == 0 and ol.EventFlags.NONE == 0
    assert (main["OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE"], main["OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST"]) == (1, 2)
    # the module's constants are R1's: an R1 caller's numbers did not move
    assert ol.OL_ERRC_SYMBOL_KIND == 24 and ol.OL_QUEUE_INFO_EMPTY == 1 and ol.OL_DEVICE_INFO_LAST == 33


def test_plain_numbers_read_at_the_session_level(level: str, host: Any) -> None:
    queue = ol.olCreateQueue(host)
    try:
        if level == "main":
            assert ol.olGetQueueInfo(queue, 1) is ol.olGetQueueInfo(queue, ol.QueueInfo.CONTEXT)
            assert ol.olGetQueueInfo(queue, 2) is True  # EMPTY
        else:
            assert ol.olGetQueueInfo(queue, 1) is True  # EMPTY
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetQueueInfo(queue, 2)  # main's EMPTY is no R1 number
            assert info.value.code is ol.ErrorCode.INVALID_ENUMERATION
        # names work at both levels
        assert ol.olGetQueueInfo(queue, ol.QueueInfo.EMPTY) is True
        assert ol.olGetQueueInfo(queue, ol.QueueInfo.CONTEXT) is host.platform.default_context
        main_only = ol.olGetDeviceInfo(host, 34) if level == "main" else None
        assert main_only is None or main_only == ol.olGetDeviceInfo(host, ol.DeviceInfo.DRIVER_ID)
        if level == "r1":
            with pytest.raises(ol.OffloadError):
                ol.olGetDeviceInfo(host, 34)
    finally:
        ol.olDestroyQueue(queue)


# --- semantics ---------------------------------------------------------------------------------


def test_host_allocations(level: str, host: Any) -> None:
    if level == "main":
        with pytest.raises(ol.OffloadError) as info:
            ol.olMemAlloc(host, A.HOST, 64)
        assert info.value.code is ol.ErrorCode.INVALID_ENUMERATION and "olMemAllocHost" in info.value.details
    else:
        ol.olMemFree(ol.olMemAlloc(host, A.HOST, 64))
    address = ol.olMemAllocHost(host, 64)
    try:
        # liboffload main refuses the value only (its check needs a PropValue): the size is still
        # sizeof(ol_device_handle_t)
        assert ol.olGetMemInfoSize(address, ol.MemInfo.DEVICE) == 8
        if level == "main":
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetMemInfo(address, ol.MemInfo.DEVICE)
            assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT
            assert info.value.details == "OL_MEM_INFO_DEVICE is not valid for host allocations"
        else:
            assert ol.olGetMemInfo(address, ol.MemInfo.DEVICE) is host
    finally:
        ol.olMemFree(address)


def test_elapsed_time_needs_profiling_at_main(level: str, host: Any) -> None:
    queue = ol.olCreateQueue(host)
    try:
        plain = [ol.olCreateEvent(queue), ol.olCreateEvent(queue)]
        timed = [ol.olCreateEvent(queue, ol.EventFlags.ENABLE_PROFILING) for _ in range(2)]
        ol.olSyncQueue(queue)
        assert ol.olGetEventElapsedTime(*timed) >= 0.0
        if level == "main":
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetEventElapsedTime(plain[0], timed[1])
            assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT and "ENABLE_PROFILING" in info.value.details
        else:
            assert ol.olGetEventElapsedTime(*plain) >= 0.0
        for event in plain + timed:
            ol.olDestroyEvent(event)
    finally:
        ol.olDestroyQueue(queue)


def test_event_flags_none_is_an_enumerator(level: str, host: Any) -> None:
    """ol_event_flags_t is a plain enum upstream: NONE (0) and ENABLE_PROFILING (1), nothing else."""
    assert [(m.name, int(m)) for m in ol.EventFlags] == [("NONE", 0), ("ENABLE_PROFILING", 1)]
    queue = ol.olCreateQueue(host)
    try:
        events = [ol.olCreateEvent(queue, ol.EventFlags.NONE), ol.olCreateEvent(queue, ol.OL_EVENT_FLAGS_NONE)]
        assert [e.profiling for e in events] == [False, False]
        for bad in (2, 3, -1, ol.OL_EVENT_FLAGS_FORCE_UINT32):
            with pytest.raises(ol.OffloadError) as info:
                ol.olCreateEvent(queue, bad)
            assert info.value.code is ol.ErrorCode.INVALID_ENUMERATION, bad
        ol.olSyncQueue(queue)
        for event in events:
            ol.olDestroyEvent(event)
    finally:
        ol.olDestroyQueue(queue)


def test_create_context_keeps_the_devices_as_listed(level: str, host: Any) -> None:
    """liboffload main appends every listed device (a repeat included): NUM_DEVICES is 2 here."""
    context = ol.olCreateContext([host, host])
    assert ol.olGetContextInfo(context, ol.ContextInfo.NUM_DEVICES) == 2
    assert ol.olGetContextInfo(context, ol.ContextInfo.DEVICES) == [host, host]
    assert ol.olGetContextInfoSize(context, ol.ContextInfo.DEVICES) == 16
    queue = ol.olCreateQueue(context, host)
    with pytest.raises(ol.OffloadError) as info:
        ol.olDestroyContext(context)
    assert info.value.code is ol.ErrorCode.INVALID_CONTEXT and "1 queue(s)" in info.value.details  # counted once
    ol.olDestroyQueue(queue)
    ol.olDestroyContext(context)


def test_invalid_level() -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.olInit(ol.InitArgs(api_level="r2"))
    assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT and "r2" in info.value.details
    with pytest.raises(ol.OffloadError) as info:
        ol.olInit(ol.InitArgs(platforms=(3.5,)))
    assert info.value.code is ol.ErrorCode.INVALID_ENUMERATION


def test_init_args_bring_up_the_platforms_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class Counting(HostBackend):
        @ol.hookimpl
        def init(self) -> list[Any]:
            calls.append("init")
            return []

    ol.register_backend("counting", Counting)
    try:
        ol.olInit(ol.InitArgs(platforms=(ol.PlatformBackend.HOST,)))
        try:
            names = [s.name for s in ol.backend_status()]
            assert "host" in names and "counting" not in names and calls == []
        finally:
            ol.olShutDown()
        ol.olInit(ol.InitArgs(platforms=("counting",)))
        try:
            assert calls == ["init"] and "host" in [s.name for s in ol.backend_status()]  # host always
        finally:
            ol.olShutDown()
    finally:
        ol.unregister_backend("counting")


# --- signatures: both forms --------------------------------------------------------------------


def test_context_first_or_by_keyword(level: str, host: Any) -> None:
    context = ol.olCreateContext([host])
    a = ol.olMemAlloc(context, host, A.DEVICE, 64)  # C order (main)
    b = ol.olMemAlloc(host, A.DEVICE, 64, context=context)  # keyword
    c = ol.olMemAlloc(host, A.DEVICE, 64)  # R1: the platform's default context
    assert ol.olGetMemInfo(context, a, ol.MemInfo.SIZE) == 64 and ol.olGetMemInfo(b, ol.MemInfo.SIZE, context) == 64
    with pytest.raises(ol.OffloadError) as info:
        ol.olGetMemInfo(context, c, ol.MemInfo.SIZE)
    assert info.value.code is ol.ErrorCode.NOT_FOUND
    with pytest.raises(ol.OffloadError) as info:
        ol.olDestroyContext(context)
    assert "2 allocation(s)" in info.value.details
    ol.olMemFree(context, a)
    ol.olMemFree(b, context=context)
    ol.olMemFree(c)
    ol.olDestroyContext(context)


def test_destroyed_context_is_refused(level: str, host: Any) -> None:
    context = ol.olCreateContext([host])
    ol.olDestroyContext(context)
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemAlloc(context, host, A.DEVICE, 64)
    assert info.value.code is ol.ErrorCode.INVALID_CONTEXT and "destroyed" in info.value.details


# --- the validation-off partial fill, as upstream --------------------------------------------------

PARTIAL_FILL = """
import ctypes
import offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
host = found[-1]
p = ol.olMemAlloc(host, ol.AllocType.DEVICE, 16)
ctypes.memset(p, 0xEE, 16)
ol.olMemFill(None, p, b"\\x01\\x02\\x03\\x04", 10)  # RemainderDoesNotWritePastFillSize
print(ctypes.string_at(p, 16).hex())
ctypes.memset(p, 0xEE, 16)
ol.olMemFill(None, p, b"\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08", 3)  # PatternLargerThanFillSize
print(ctypes.string_at(p, 16).hex())
ol.olMemFree(p)
ol.olShutDown()
"""


def test_partial_last_fill_with_validation_off(run_python: Any) -> None:
    proc = run_python(PARTIAL_FILL, env={"OFFLOAD_DISABLE_VALIDATION": "1"})
    assert proc.stdout.split() == ["01020304010203040102" + "ee" * 6, "010203" + "ee" * 13]


def test_partial_fill_refused_with_validation_on(run_python: Any) -> None:
    proc = run_python(PARTIAL_FILL, check=False)
    assert "OL_ERRC_INVALID_SIZE" in proc.stderr and "FillSize % PatternSize != 0" in proc.stderr


# --- trace spelling ------------------------------------------------------------------------------

TRACED = """
import offload as ol
ol.olInit(ol.InitArgs(api_level={level!r}))
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
host = found[-1]
p = ol.olMemAlloc(host, ol.AllocType.DEVICE, 16)
q = ol.olCreateQueue(host)
e = ol.olCreateEvent(q)
ol.olSyncEvent(e)
ol.olDestroyEvent(e)
ol.olDestroyQueue(q)
ol.olMemFree(p)
ol.olShutDown()
"""

TRACE_R1 = [
    "---> olInit()-> OL_SUCCESS",
    "---> olIterateDevices(.Callback = ADDR, .UserData = nullptr)-> OL_SUCCESS",
    "---> olMemAlloc(.Device = ADDR, .Type = OL_ALLOC_TYPE_DEVICE, .Size = 16, .AllocationOut = ADDR (ADDR))-> OL_SUCCESS",
    "---> olCreateQueue(.Device = ADDR, .Queue = ADDR (ADDR))-> OL_SUCCESS",
    "---> olCreateEvent(.Queue = ADDR, .Event = ADDR (ADDR))-> OL_SUCCESS",
    "---> olSyncEvent(.Event = ADDR)-> OL_SUCCESS",
    "---> olDestroyEvent(.Event = ADDR)-> OL_SUCCESS",
    "---> olDestroyQueue(.Queue = ADDR)-> OL_SUCCESS",
    "---> olMemFree(.Address = ADDR)-> OL_SUCCESS",
    "---> olShutDown()-> OL_SUCCESS",
]
TRACE_MAIN = [
    "---> olInit(.InitArgs = ADDR)-> OL_SUCCESS",
    "---> olIterateDevices(.Callback = ADDR, .UserData = nullptr)-> OL_SUCCESS",
    "---> olMemAlloc(.Context = nullptr, .Device = ADDR, .Type = OL_ALLOC_TYPE_DEVICE, .Size = 16, .AllocationOut = ADDR (ADDR))-> OL_SUCCESS",
    "---> olCreateQueue(.Context = nullptr, .Device = ADDR, .Queue = ADDR (ADDR))-> OL_SUCCESS",
    "---> olCreateEvent(.Queue = ADDR, .Flags = OL_EVENT_FLAGS_NONE, .Event = ADDR (ADDR))-> OL_SUCCESS",
    "---> olSyncEvent(.Event = ADDR)-> OL_SUCCESS",
    "---> olDestroyEvent(.Event = ADDR)-> OL_SUCCESS",
    "---> olDestroyQueue(.Queue = ADDR)-> OL_SUCCESS",
    "---> olMemFree(.Context = nullptr, .Address = ADDR)-> OL_SUCCESS",
    "---> olShutDown()-> OL_SUCCESS",
]


@pytest.mark.parametrize(("trace_level", "expected"), [("r1", TRACE_R1), ("main", TRACE_MAIN)])
def test_trace_spelling_per_level(run_python: Any, trace_level: str, expected: list[str]) -> None:
    proc = run_python(TRACED.format(level=trace_level), env={"OFFLOAD_TRACE": "1"})
    assert [re.sub(r"0x[0-9a-f]+", "ADDR", line) for line in proc.stderr.splitlines()] == expected


def test_trace_of_a_per_argument_launch_at_main(run_python: Any) -> None:
    code = """
import ctypes, offload as ol, offload_host
ol.olInit(ol.InitArgs(api_level="main"))
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
host = found[-1]
prog = ol.olCreateProgram(host, offload_host.build_test_kernel("foo"))
foo = ol.olGetSymbol(prog, "foo", ol.SymbolKind.KERNEL)
out = ol.olMemAlloc(host, ol.AllocType.DEVICE, 256)
ol.olLaunchKernel(None, host, foo, ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1)), None, [ctypes.c_void_p(out)])
print(list((ctypes.c_uint32 * 4).from_address(out)))
"""
    proc = run_python(code, env={"OFFLOAD_TRACE": "1"})
    assert proc.stdout.strip() == "[0, 1, 2, 3]"
    (line,) = [l for l in proc.stderr.splitlines() if l.startswith("---> olLaunchKernel")]
    line = re.sub(r"0x[0-9a-f]+", "ADDR", line)
    assert line.startswith("---> olLaunchKernel(.Queue = nullptr, .Device = ADDR, .Kernel = ADDR, .LaunchSizeArgs = ADDR (")
    assert line.endswith(", .Properties = nullptr, .NumArgs = 1, .ArgPtrs = ADDR {ADDR}, .ArgSizes = ADDR {8})-> OL_SUCCESS")


# --- memcpy rect and accessibility (core paths, host memory) --------------------------------------


def test_memcpy_rect_between_host_buffers(level: str, host: Any) -> None:
    src = (ctypes.c_uint8 * 64)(*range(64))  # 4 rows of 16
    dst = (ctypes.c_uint8 * 96)()  # 4 rows of 24
    ol.olMemcpyRect(
        None,
        ol.Rect(ctypes.addressof(dst), host, (2, 1, 0), 24, 96),
        ol.Rect(ctypes.addressof(src), host, (4, 0, 0), 16, 64),
        (8, 3, 1),
    )
    expected = bytearray(96)
    for row in range(3):
        expected[(1 + row) * 24 + 2 : (1 + row) * 24 + 10] = bytes(range(row * 16 + 4, row * 16 + 12))
    assert bytes(dst) == bytes(expected)


@pytest.mark.parametrize("extent", [(0, 0, 0), (0, 3, 1), (8, 0, 1), (8, 3, 0)])
def test_memcpy_rect_of_a_zero_extent_is_invalid_size(level: str, host: Any, extent: tuple[int, int, int]) -> None:
    """As upstream's olMemcpyRect (PR #160321, test InvalidSize): a table check, so validation off
    skips it, and the copy then does nothing."""
    src = (ctypes.c_uint8 * 64)(*range(64))
    dst = (ctypes.c_uint8 * 64)()
    for value in (extent, ol.Dimensions(*extent)):
        with pytest.raises(ol.OffloadError) as info:
            ol.olMemcpyRect(None, ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 16, 64), ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 16, 64), value)
        assert info.value.code is ol.ErrorCode.INVALID_SIZE
        assert info.value.details == "validation failure: Extent.x == 0 || Extent.y == 0 || Extent.z == 0"
    assert bytes(dst) == bytes(64)


def test_memcpy_rect_of_a_zero_extent_with_validation_off(run_python: Any) -> None:
    code = """
import ctypes, offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
host = found[-1]
src, dst = (ctypes.c_uint8 * 64)(*range(64)), (ctypes.c_uint8 * 64)()
ol.olMemcpyRect(None, ol.Rect(ctypes.addressof(dst), host, (0, 0, 0), 16, 64), ol.Rect(ctypes.addressof(src), host, (0, 0, 0), 16, 64), (8, 0, 1))
print(bytes(dst) == bytes(64))
"""
    assert run_python(code, env={"OFFLOAD_DISABLE_VALIDATION": "1"}).stdout.strip() == "True"


def test_mem_is_accessible_on_the_host(level: str, host: Any) -> None:
    buffer = (ctypes.c_uint8 * 64)()
    assert ol.olMemIsAccessible(host, ctypes.addressof(buffer), 64) is True
    assert ol.olMemIsAccessible(host, 8, 8) is False  # the first page is never mapped
