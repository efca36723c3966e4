"""6.3 platform (olGetPlatformInfo.cpp, olGetPlatformInfoSize.cpp)."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol

from ._helpers import InfoQueryRefusals

_STRINGS = [ol.PlatformInfo.NAME, ol.PlatformInfo.VENDOR_NAME, ol.PlatformInfo.VERSION]


class TestPlatformInfo(InfoQueryRefusals):
    query, valid, subject = "olGetPlatformInfo", ol.PlatformInfo.NAME, "platform"

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


class TestPlatformInfoSize(InfoQueryRefusals):
    query, valid, subject = "olGetPlatformInfoSize", ol.PlatformInfo.BACKEND, "platform"

    @pytest.mark.parametrize("prop", _STRINGS, ids=lambda p: p.name)
    def test_success_string(self, platform: Any, prop: ol.PlatformInfo) -> None:
        assert ol.olGetPlatformInfoSize(platform, prop) != 0

    def test_success_backend(self, platform: Any) -> None:
        assert ol.olGetPlatformInfoSize(platform, ol.PlatformInfo.BACKEND) == 4  # sizeof(enum)
