"""6.3 platform (olGetPlatformInfo.cpp, olGetPlatformInfoSize.cpp)."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol

from ._helpers import FORCE_UINT32, NULL_HANDLE, Base, raises

_STRINGS = [ol.PlatformInfo.NAME, ol.PlatformInfo.VENDOR_NAME, ol.PlatformInfo.VERSION]


class TestPlatformInfo(Base):
    @pytest.mark.parametrize("prop", _STRINGS, ids=lambda p: p.name)
    def test_success_string(self, platform: Any, prop: ol.PlatformInfo) -> None:
        size = ol.olGetPlatformInfoSize(platform, prop)
        assert 0 < size < 0x1000
        value = ol.olGetPlatformInfo(platform, prop)
        assert isinstance(value, str)
        assert "\0" not in value
        assert len(value.encode()) == size - 1

    def test_success_backend(self, platform: Any) -> None:
        value = ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND)
        assert isinstance(value, ol.PlatformBackend)

    def test_host_backend(self, host_device: Any) -> None:
        host_platform = ol.olGetDeviceInfo(host_device, ol.DeviceInfo.PLATFORM)
        assert ol.olGetPlatformInfo(host_platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST

    def test_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            ol.olGetPlatformInfo(None, ol.PlatformInfo.NAME)

    def test_invalid_platform_info_enumeration(self, platform: Any) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetPlatformInfo(platform, FORCE_UINT32)


class TestPlatformInfoSize(Base):
    @pytest.mark.parametrize("prop", _STRINGS, ids=lambda p: p.name)
    def test_success_string(self, platform: Any, prop: ol.PlatformInfo) -> None:
        assert ol.olGetPlatformInfoSize(platform, prop) != 0

    def test_success_backend(self, platform: Any) -> None:
        assert ol.olGetPlatformInfoSize(platform, ol.PlatformInfo.BACKEND) == 4  # sizeof(enum)

    def test_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            ol.olGetPlatformInfoSize(None, ol.PlatformInfo.BACKEND)

    def test_invalid_platform_info_enumeration(self, platform: Any) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetPlatformInfoSize(platform, FORCE_UINT32)
