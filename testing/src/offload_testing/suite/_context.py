"""liboffload main's contexts (unittests/OffloadAPI/context): olCreateContext, olDestroyContext,
olGetContextInfo(Size), and the context parameters of olMemAlloc, olMemFree, olGetMemInfo,
olCreateQueue, olCreateProgram and olGetQueueInfo(CONTEXT)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol

from ._helpers import NULL_HANDLE, NULL_POINTER, Base, raises, require

C = ol.ContextInfo


class _ContextBase(Base):
    @pytest.fixture
    def context(self, device: Any) -> Iterator[Any]:
        made = ol.olCreateContext([device])
        yield made
        try:
            ol.olDestroyContext(made)
        except ol.OffloadError as exc:
            assert exc.code is ol.ErrorCode.INVALID_CONTEXT  # the test destroyed it already


class TestContext(_ContextBase):
    def test_success(self, context: Any, device: Any) -> None:
        assert isinstance(context, ol.ContextHandle)
        assert ol.olGetContextInfo(context, C.NUM_DEVICES) == 1
        assert ol.olGetContextInfo(context, C.DEVICES) == [device]
        assert ol.olGetContextInfo(context, C.PLATFORM) is ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)

    def test_info_size(self, context: Any) -> None:
        assert ol.olGetContextInfoSize(context, C.NUM_DEVICES) == 8
        assert ol.olGetContextInfoSize(context, C.DEVICES) == 8
        assert ol.olGetContextInfoSize(context, C.PLATFORM) == 8

    def test_info_invalid_enum(self, context: Any) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetContextInfo(context, 0x7FFFFFFF)

    def test_no_devices(self) -> None:
        with raises(ol.ErrorCode.INVALID_SIZE):
            ol.olCreateContext([])

    def test_null_devices(self) -> None:
        with raises(NULL_POINTER):
            ol.olCreateContext(None)

    def test_devices_of_two_platforms(self, device: Any, ol_session: list[Any]) -> None:
        platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
        others = [d for d in ol_session if ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM) is not platform]
        if not others:
            pytest.skip("one platform only")
        with raises(ol.ErrorCode.INVALID_DEVICE):
            ol.olCreateContext([device, others[0]])

    def test_destroy_success(self, device: Any) -> None:
        """olDestroyContextTest.Success."""
        ol.olDestroyContext(ol.olCreateContext([device]))

    def test_info_invalid_null_handle(self) -> None:
        """olGetContextInfoTest.InvalidNullHandle."""
        with raises(NULL_HANDLE):
            ol.olGetContextInfo(None, C.NUM_DEVICES)

    def test_info_size_invalid_null_handle(self) -> None:
        """olGetContextInfoSizeTest.InvalidNullHandle."""
        with raises(NULL_HANDLE):
            ol.olGetContextInfoSize(None, C.NUM_DEVICES)

    def test_destroy_null(self) -> None:
        with raises(NULL_HANDLE):
            ol.olDestroyContext(None)

    def test_destroyed_is_stale(self, context: Any) -> None:
        ol.olDestroyContext(context)
        with raises(ol.ErrorCode.INVALID_CONTEXT):
            ol.olGetContextInfo(context, C.NUM_DEVICES)
        with raises(ol.ErrorCode.INVALID_CONTEXT):
            ol.olDestroyContext(context)

    def test_default_context_is_not_destroyed(self, device: Any, capabilities: Any) -> None:
        require(capabilities, "queues")
        queue = ol.olCreateQueue(device)
        try:
            default = ol.olGetQueueInfo(queue, ol.QueueInfo.CONTEXT)
            assert device in ol.olGetContextInfo(default, C.DEVICES)
            with raises(ol.ErrorCode.INVALID_CONTEXT) as info:
                ol.olDestroyContext(default)
            assert "default" in info.value.details
        finally:
            ol.olDestroyQueue(queue)


class TestContextOwnership(_ContextBase):
    def test_allocation_belongs_to_its_context(self, context: Any, device: Any, capabilities: Any) -> None:
        require(capabilities, "memory")
        address = ol.olMemAlloc(context, device, ol.AllocType.DEVICE, 64)
        assert ol.olGetMemInfo(context, address, ol.MemInfo.SIZE) == 64
        other = ol.olCreateContext([device])
        try:
            with raises(ol.ErrorCode.INVALID_CONTEXT):
                ol.olMemFree(other, address)
            with raises(ol.ErrorCode.NOT_FOUND):
                ol.olGetMemInfo(other, address, ol.MemInfo.SIZE)
        finally:
            ol.olDestroyContext(other)
        with raises(ol.ErrorCode.INVALID_CONTEXT) as info:
            ol.olDestroyContext(context)
        assert f"{address:#x}" in info.value.details and "allocation" in info.value.details
        ol.olMemFree(context, address)
        ol.olDestroyContext(context)

    def test_keyword_context(self, context: Any, device: Any, capabilities: Any) -> None:
        require(capabilities, "memory")
        address = ol.olMemAlloc(device, ol.AllocType.DEVICE, 64, context=context)
        ol.olMemFree(address, context=context)

    def test_queue_and_program(self, context: Any, device: Any, capabilities: Any, program_binary: Any) -> None:
        require(capabilities, "queues")
        queue = ol.olCreateQueue(context, device)
        assert ol.olGetQueueInfo(queue, ol.QueueInfo.CONTEXT) is context
        with raises(ol.ErrorCode.INVALID_CONTEXT) as info:
            ol.olDestroyContext(context)
        assert "queue" in info.value.details
        ol.olDestroyQueue(queue)
        if capabilities.programs:
            program = ol.olCreateProgram(context, device, program_binary("foo"))
            with raises(ol.ErrorCode.INVALID_CONTEXT) as info:
                ol.olDestroyContext(context)
            assert "program" in info.value.details
            ol.olDestroyProgram(program)
        ol.olDestroyContext(context)

    def test_device_outside_context(self, device: Any, ol_session: list[Any], capabilities: Any) -> None:
        require(capabilities, "memory")
        others = [d for d in ol_session if d is not device]
        if not others:
            pytest.skip("one device only")
        context = ol.olCreateContext([others[0]])
        try:
            with raises(ol.ErrorCode.INVALID_DEVICE):
                ol.olMemAlloc(context, device, ol.AllocType.DEVICE, 64)
        finally:
            ol.olDestroyContext(context)
