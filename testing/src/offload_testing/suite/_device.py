"""6.4 device (olIterateDevices.cpp, olGetDeviceInfo.cpp, olGetDeviceInfoSize.cpp)."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol

from ._helpers import NULL_HANDLE, NULL_POINTER, Base, InfoQueryRefusals, raises

D = ol.DeviceInfo
_STRINGS = [D.NAME, D.PRODUCT_NAME, D.UID, D.VENDOR, D.DRIVER_VERSION]
#: Values liboffload checks ``> 0`` (on a device); ``capabilities.zero_info`` may allow 0.
_POSITIVE = [
    D.MAX_WORK_GROUP_SIZE,
    D.MAX_WORK_SIZE,
    D.VENDOR_ID,
    D.NUM_COMPUTE_UNITS,
    D.MAX_CLOCK_FREQUENCY,
    D.MEMORY_CLOCK_RATE,
    D.ADDRESS_BITS,
    D.MAX_MEM_ALLOC_SIZE,
    D.GLOBAL_MEM_SIZE,
    D.WORK_GROUP_LOCAL_MEM_SIZE,
    D.NUM_LANES,
    D.SINGLE_FP_CONFIG,
    D.DOUBLE_FP_CONFIG,
    D.HALF_FP_CONFIG,
    D.NATIVE_VECTOR_WIDTH_CHAR,
    D.NATIVE_VECTOR_WIDTH_SHORT,
    D.NATIVE_VECTOR_WIDTH_INT,
    D.NATIVE_VECTOR_WIDTH_LONG,
    D.NATIVE_VECTOR_WIDTH_FLOAT,
    D.NATIVE_VECTOR_WIDTH_DOUBLE,
    D.NATIVE_VECTOR_WIDTH_HALF,
]
_U32 = {
    D.MAX_WORK_GROUP_SIZE, D.MAX_WORK_SIZE, D.VENDOR_ID, D.NUM_COMPUTE_UNITS, D.MAX_CLOCK_FREQUENCY,
    D.MEMORY_CLOCK_RATE, D.ADDRESS_BITS, D.NUM_LANES, D.DRIVER_ID,
    *(p for p in D if p.name.startswith("NATIVE_VECTOR_WIDTH_")),
}  # fmt: skip
_FP_CONFIG = {D.SINGLE_FP_CONFIG, D.DOUBLE_FP_CONFIG, D.HALF_FP_CONFIG}
_HALF = {D.HALF_FP_CONFIG, D.NATIVE_VECTOR_WIDTH_HALF}
_BOOLS = [D.SINGLE_FP_SUPPORT, D.DOUBLE_FP_SUPPORT, D.HALF_FP_SUPPORT, D.COOPERATIVE_LAUNCH_SUPPORT]
_DIMENSIONS = [D.MAX_WORK_GROUP_SIZE_PER_DIMENSION, D.MAX_WORK_SIZE_PER_DIMENSION]
#: The C size of every fixed-size property (strings: strlen + 1).
_C_SIZE = {
    D.TYPE: 4,
    D.PLATFORM: 8,
    **{p: 4 for p in _U32},
    **{p: 4 for p in _FP_CONFIG},
    D.MAX_MEM_ALLOC_SIZE: 8,
    D.GLOBAL_MEM_SIZE: 8,
    D.WORK_GROUP_LOCAL_MEM_SIZE: 8,
    **{p: 12 for p in _DIMENSIONS},
    **{p: 1 for p in _BOOLS},
}
assert set(_C_SIZE) | set(_STRINGS) == set(D)


def _name(prop: Any) -> str:
    return str(prop.name)


class TestIterateDevices(Base):
    def test_success_empty_callback(self) -> None:
        ol.olIterateDevices(lambda dev, data: False, None)

    def test_success_get_device(self, ol_session: list[Any]) -> None:
        count = 0

        def first(dev: Any, data: Any) -> bool:
            nonlocal count
            count += 1
            return False

        ol.olIterateDevices(first, None)
        if not ol_session:
            assert count == 0
            pytest.skip("no devices")
        assert count == 1, "olIterateDevices went on after the callback returned False"
        captured: list[Any] = []
        ol.olIterateDevices(lambda dev, acc: acc.append(dev), captured)
        assert len(captured) == 1 and isinstance(captured[0], ol.DeviceHandle)

    def test_success_all_devices(self, ol_session: list[Any]) -> None:
        seen: list[Any] = []
        ol.olIterateDevices(lambda dev, acc: acc.append(dev) or True, seen)
        assert seen == ol_session
        assert len(set(map(id, seen))) == len(seen)

    def test_user_data(self, ol_session: list[Any]) -> None:
        marker = object()
        got: list[Any] = []

        def collect(dev: ol.DeviceHandle, data: Any) -> bool:
            got.append(data)
            return True

        ol.olIterateDevices(collect, marker)
        assert got == [marker] * len(ol_session)

    def test_invalid_null_callback(self) -> None:
        with raises(NULL_POINTER):
            ol.olIterateDevices(None, None)


class TestDeviceInfo(InfoQueryRefusals):
    query, valid, subject = "olGetDeviceInfo", D.TYPE, "device"

    def test_success_type(self, device: Any) -> None:
        assert isinstance(ol.olGetDeviceInfo(device, D.TYPE), ol.DeviceType)

    def test_host_success_type(self, host_device: Any) -> None:
        assert ol.olGetDeviceInfo(host_device, D.TYPE) == ol.DeviceType.HOST

    def test_success_platform(self, device: Any) -> None:
        platform = ol.olGetDeviceInfo(device, D.PLATFORM)
        assert isinstance(platform, ol.PlatformHandle)
        assert platform is ol.olGetDeviceInfo(device, D.PLATFORM)

    @pytest.mark.parametrize("prop", _STRINGS, ids=_name)
    def test_success_string(self, device: Any, prop: ol.DeviceInfo) -> None:
        size = ol.olGetDeviceInfoSize(device, prop)
        assert size > 0
        value = ol.olGetDeviceInfo(device, prop)
        assert isinstance(value, str) and "\0" not in value
        assert len(value.encode()) == size - 1

    @pytest.mark.parametrize("prop", [D.NAME, D.PRODUCT_NAME], ids=_name)
    def test_host_string(self, host_device: Any, prop: ol.DeviceInfo) -> None:
        value = ol.olGetDeviceInfo(host_device, prop)
        assert isinstance(value, str)
        assert len(value.encode()) == ol.olGetDeviceInfoSize(host_device, prop) - 1

    @pytest.mark.parametrize("prop", _POSITIVE, ids=_name)
    def test_success_value(self, device: Any, capabilities: Any, prop: ol.DeviceInfo) -> None:
        value = ol.olGetDeviceInfo(device, prop)
        assert isinstance(value, int) and not isinstance(value, bool)
        if prop in _FP_CONFIG:
            assert isinstance(value, ol.DeviceFpCapabilityFlag)
        limit = 0xFFFFFFFF if prop in _U32 or prop in _FP_CONFIG else 0xFFFFFFFFFFFFFFFF
        assert 0 <= value <= limit
        if prop in _HALF and not ol.olGetDeviceInfo(device, D.HALF_FP_SUPPORT):
            return  # liboffload only asks these to succeed; without half support 0 is right
        if prop not in capabilities.zero_info:
            assert value > 0, f"{prop.name} is 0 (list it in capabilities.zero_info if that is legitimate)"

    @pytest.mark.parametrize("prop", _BOOLS, ids=_name)
    def test_success_bool(self, device: Any, prop: ol.DeviceInfo) -> None:
        assert isinstance(ol.olGetDeviceInfo(device, prop), bool)

    def test_fp_support_matches_config(self, device: Any) -> None:
        pairs = [
            (D.SINGLE_FP_SUPPORT, D.SINGLE_FP_CONFIG),
            (D.DOUBLE_FP_SUPPORT, D.DOUBLE_FP_CONFIG),
            (D.HALF_FP_SUPPORT, D.HALF_FP_CONFIG),
        ]
        for support, config in pairs:
            if not ol.olGetDeviceInfo(device, support):
                continue
            assert ol.olGetDeviceInfo(device, config) != 0, f"{support.name} is true but {config.name} is 0"

    @pytest.mark.parametrize("prop", _DIMENSIONS, ids=_name)
    def test_success_per_dimension(self, device: Any, prop: ol.DeviceInfo) -> None:
        value = ol.olGetDeviceInfo(device, prop)
        assert isinstance(value, ol.Dimensions)
        assert value.x > 0 and value.y > 0 and value.z > 0

    def test_invalid_enumeration_last(self, device: Any) -> None:
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            ol.olGetDeviceInfo(device, len(D))


class TestDeviceInfoSize(InfoQueryRefusals):
    query, valid, subject = "olGetDeviceInfoSize", D.TYPE, "device"

    @pytest.mark.parametrize("prop", sorted(_C_SIZE), ids=_name)
    def test_success_fixed(self, device: Any, prop: ol.DeviceInfo) -> None:
        assert ol.olGetDeviceInfoSize(device, prop) == _C_SIZE[prop]

    @pytest.mark.parametrize("prop", _STRINGS, ids=_name)
    def test_success_string(self, device: Any, prop: ol.DeviceInfo) -> None:
        assert ol.olGetDeviceInfoSize(device, prop) != 0
