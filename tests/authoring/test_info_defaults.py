"""Device properties a backend may leave out (``hookspecs.get_device_info``): the defaults follow
from its other answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload import DeviceFpCapabilityFlag as Fp
from offload import DeviceInfo as D

from helpers import devices
from kit_backends import BareBackend

NAME = "infodefaults"


@pytest.fixture
def device_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``device_with(info, drop)``: the device of a backend whose get_device_info adds ``info`` and
    leaves out ``drop``."""
    monkeypatch.setenv("OFFLOAD_BACKENDS", NAME)
    started = []

    def make(extra: dict[D, Any], drop: frozenset[D] = frozenset()) -> Any:
        class Backend(BareBackend):
            @ol.hookimpl
            def get_device_info(self, device: str) -> dict[D, Any]:
                info = {**BareBackend.get_device_info(self, device), **extra}
                return {prop: value for prop, value in info.items() if prop not in drop}

        ol.register_backend(NAME, Backend)
        ol.olInit()
        started.append(True)
        return devices()[0]

    yield make
    if started:
        ol.olShutDown()
    ol.unregister_backend(NAME)


def test_fp_support_follows_the_defaulted_configs(device_with: Any) -> None:
    device = device_with({})
    assert ol.olGetDeviceInfo(device, D.SINGLE_FP_SUPPORT) is True
    assert ol.olGetDeviceInfo(device, D.DOUBLE_FP_SUPPORT) is True
    assert ol.olGetDeviceInfo(device, D.HALF_FP_SUPPORT) is False
    assert ol.olGetDeviceInfoSize(device, D.HALF_FP_SUPPORT) == 1


def test_fp_support_follows_the_given_configs(device_with: Any) -> None:
    device = device_with({D.HALF_FP_CONFIG: Fp.FMA, D.DOUBLE_FP_CONFIG: 0})
    assert ol.olGetDeviceInfo(device, D.HALF_FP_SUPPORT) is True
    assert ol.olGetDeviceInfo(device, D.DOUBLE_FP_SUPPORT) is False


def test_given_support_wins(device_with: Any) -> None:
    device = device_with({D.SINGLE_FP_SUPPORT: False})
    assert ol.olGetDeviceInfo(device, D.SINGLE_FP_SUPPORT) is False


def test_product_name_defaults_to_name(device_with: Any) -> None:
    device = device_with({D.NAME: "Widget 3000"})
    assert ol.olGetDeviceInfo(device, D.PRODUCT_NAME) == "Widget 3000"
    assert ol.olGetDeviceInfoSize(device, D.PRODUCT_NAME) == len("Widget 3000") + 1


def test_no_default_is_unimplemented(device_with: Any) -> None:
    device = device_with({}, frozenset({D.NUM_LANES, D.NAME}))
    for prop in (D.NUM_LANES, D.PRODUCT_NAME):  # PRODUCT_NAME has no default without NAME
        with pytest.raises(ol.OffloadError) as error:
            ol.olGetDeviceInfo(device, prop)
        assert error.value.code is ol.ErrorCode.UNIMPLEMENTED, error.value
        assert f"OL_DEVICE_INFO_{prop.name}: plugin did not provide a response" in error.value.details
