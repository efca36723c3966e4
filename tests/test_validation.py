"""Validation order, OFFLOAD_DISABLE_VALIDATION, and handle liveness independent of it."""

from __future__ import annotations

import pytest

import offload as ol
from offload._core.session import STATE

E = ol.ErrorCode


def _code(call, *args) -> ol.ErrorCode:
    with pytest.raises(ol.OffloadError) as info:
        call(*args)
    return info.value.code


def test_own_conditions_come_before_null_handles(session: None) -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemAlloc(None, ol.AllocType.DEVICE, 0)
    assert info.value.code is E.INVALID_SIZE
    assert info.value.details == "validation failure: Size == 0"


def test_null_handles_come_before_null_pointers(session: None) -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemcpy(None, 0, None, 0, None, 8)
    assert info.value.code is E.INVALID_NULL_HANDLE
    assert info.value.details == "validation failure: NULL == DstDevice"


def test_null_pointer_details(host: ol.Device) -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemcpy(None, 0, host, 0, host, 8)
    assert (info.value.code, info.value.details) == (E.INVALID_NULL_POINTER, "validation failure: NULL == DstPtr")
    assert _code(ol.olMemFree, None) is E.INVALID_NULL_POINTER
    assert _code(ol.olMemFree, 0) is E.INVALID_NULL_POINTER
    assert _code(ol.olIterateDevices, None) is E.INVALID_NULL_POINTER


def test_fill_pattern_checks(host: ol.Device) -> None:
    ptr = ol.olMemAlloc(host, ol.AllocType.HOST, 64)
    assert _code(ol.olMemFill, None, ptr, b"", 64) is E.INVALID_SIZE
    assert _code(ol.olMemFill, None, ptr, b"abc", 64) is E.INVALID_SIZE
    assert _code(ol.olMemFill, None, ptr, b"ab", 66) is E.INVALID_SIZE  # overruns the allocation
    ol.olMemFree(ptr)


def test_wrong_kind_and_stale_handles(host: ol.Device) -> None:
    queue = ol.olCreateQueue(host)
    assert _code(ol.olGetDeviceInfo, queue, ol.DeviceInfo.NAME) is E.INVALID_DEVICE
    assert _code(ol.olSyncQueue, host) is E.INVALID_QUEUE
    assert _code(ol.olSyncEvent, queue) is E.INVALID_EVENT
    assert _code(ol.olGetPlatformInfo, host, ol.PlatformInfo.NAME) is E.INVALID_PLATFORM
    assert _code(ol.olDestroyProgram, queue) is E.INVALID_ARGUMENT
    ol.olDestroyQueue(queue)
    with pytest.raises(ol.OffloadError) as info:
        ol.olSyncQueue(queue)
    assert info.value.code is E.INVALID_QUEUE and "destroyed" in info.value.details
    assert _code(ol.olDestroyQueue, queue) is E.INVALID_QUEUE


def test_invalid_enumerations(host: ol.Device) -> None:
    assert _code(ol.olGetDeviceInfo, host, ol.OL_DEVICE_INFO_FORCE_UINT32) is E.INVALID_ENUMERATION
    assert _code(ol.olMemAlloc, host, 7, 8) is E.INVALID_ENUMERATION


def test_disable_validation_skips_conditions_but_not_liveness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_DISABLE_VALIDATION", "0")  # presence counts, not value
    assert STATE.ctx is None
    ol.olInit()
    try:
        assert STATE.ctx.validate is False
        found = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        host = found[-1]
        # Size == 0 is no longer a validation failure; the impl takes it (a 0-byte alloc is not an error)
        ptr = ol.olMemAlloc(host, ol.AllocType.HOST, 0)
        ol.olMemFree(ptr)
        # a NULL or stale handle still never reaches a backend
        assert _code(ol.olCreateQueue, None) is E.INVALID_NULL_HANDLE
        queue = ol.olCreateQueue(host)
        ol.olDestroyQueue(queue)
        assert _code(ol.olSyncQueue, queue) is E.INVALID_QUEUE
    finally:
        ol.olShutDown()


def test_errors_keep_nothing_half_done(host: ol.Device) -> None:
    queue = ol.olCreateQueue(host)
    event = ol.olCreateEvent(queue)
    ol.olDestroyEvent(event)
    gate_ran = []
    ol.olLaunchHostFunction(queue, gate_ran.append, 1)
    # one bad event in the list: nothing is enqueued for the good one either
    good = ol.olCreateEvent(queue)
    assert _code(ol.olWaitEvents, queue, [good, event]) is E.INVALID_EVENT
    assert _code(ol.olWaitEvents, queue, [good, None]) is E.INVALID_NULL_HANDLE
    ol.olSyncQueue(queue)
    assert gate_ran == [1]
    ol.olDestroyQueue(queue)


def test_kernel_arguments_must_be_bytes_like(host: ol.Device) -> None:
    import offload_host

    program = ol.olCreateProgram(host, offload_host.build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    launch = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
    queue = ol.olCreateQueue(host)
    for q in (None, queue):
        assert _code(ol.olLaunchKernel, q, host, kernel, 5, launch) is E.INVALID_ARGUMENT
        assert _code(ol.olLaunchKernel, q, host, kernel, None, ol.KernelLaunchSizeArgs(1, (0, 1, 1), (1, 1, 1))) is E.INVALID_SIZE
        ol.olLaunchKernel(q, host, kernel, bytearray(8), launch)
    with pytest.raises(ol.OffloadError):
        ol.KernelLaunchSizeArgs(4, (1, 1, 1), (1, 1, 1))
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
    ol.olDestroyProgram(program)
