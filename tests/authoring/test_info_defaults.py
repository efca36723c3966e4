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


@pytest.mark.parametrize(("prop", "value", "ctype"), [(D.NUM_LANES, 1 << 32, "uint32_t"), (D.VENDOR_ID, -1, "uint32_t"), (D.GLOBAL_MEM_SIZE, 1 << 64, "uint64_t")])
def test_out_of_range_is_the_backends_failure(device_with: Any, prop: D, value: int, ctype: str) -> None:
    """A value outside its C type (``hookspecs.DEVICE_INFO_TYPES``) is the backend's failure,
    named with the property, the value and the type: not UNIMPLEMENTED (it did answer)."""
    assert ol.hookspecs.DEVICE_INFO_TYPES[prop] == ctype
    device = device_with({prop: value})
    with pytest.raises(ol.OffloadError) as error:
        ol.olGetDeviceInfo(device, prop)
    assert error.value.code is ol.ErrorCode.BACKEND_FAILURE, error.value
    assert f"OL_DEVICE_INFO_{prop.name}" in error.value.details and str(value) in error.value.details
    assert ctype in error.value.details


def test_every_property_has_a_c_type() -> None:
    types = ol.hookspecs.DEVICE_INFO_TYPES
    assert set(types) == set(D)
    assert types[D.NAME] == "char[]" and types[D.MAX_WORK_GROUP_SIZE_PER_DIMENSION] == "ol_dimensions_t"
    assert types[D.TYPE] == "ol_device_type_t" and types[D.SINGLE_FP_CONFIG] == "ol_device_fp_capability_flag_t"
    assert types[D.MAX_MEM_ALLOC_SIZE] == "uint64_t" and types[D.SINGLE_FP_SUPPORT] == "bool"


@pytest.fixture
def platform_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``platform_with(answer)``: olInit with a backend whose ``platform_info`` returns ``answer``
    (None: no such hook); returns the BackendStatus and the platform (None when skipped)."""
    monkeypatch.setenv("OFFLOAD_BACKENDS", NAME)
    started = []

    def make(answer: Any) -> tuple[Any, Any]:
        class Backend(BareBackend):
            if answer is not None:

                @ol.hookimpl
                def platform_info(self) -> Any:
                    return answer

        ol.register_backend(NAME, Backend)
        ol.olInit()
        started.append(True)
        status = next(s for s in ol.backend_status() if s.name == NAME)
        found = devices()
        return status, (ol.olGetDeviceInfo(found[0], D.PLATFORM) if found else None)

    yield make
    if started:
        ol.olShutDown()
    ol.unregister_backend(NAME)


def test_platform_info_is_the_backends(platform_with: Any) -> None:
    P = ol.PlatformInfo
    _, platform = platform_with({P.VENDOR_NAME: "Acme", P.VERSION: "Acme CL 9.1"})
    assert ol.olGetPlatformInfo(platform, P.VENDOR_NAME) == "Acme"
    assert ol.olGetPlatformInfo(platform, P.VERSION) == "Acme CL 9.1"
    assert ol.olGetPlatformInfoSize(platform, P.VERSION) == len("Acme CL 9.1") + 1
    assert ol.olGetPlatformInfo(platform, P.NAME) == NAME


def test_platform_info_defaults(platform_with: Any) -> None:
    P = ol.PlatformInfo
    _, platform = platform_with({P.VERSION: "2.0"})
    assert ol.olGetPlatformInfo(platform, P.VENDOR_NAME) == "Unknown platform vendor"
    assert ol.olGetPlatformInfo(platform, P.VERSION) == "2.0"


@pytest.mark.parametrize("answer", [{ol.PlatformInfo.NAME: "renamed"}, {ol.PlatformInfo.VERSION: 3}])
def test_platform_info_refused(platform_with: Any, answer: Any) -> None:
    """NAME and BACKEND are the core's, and the values are strings: otherwise the backend is
    skipped with the reason (``offload backends``)."""
    with pytest.warns(ol.OffloadBackendWarning):
        status, platform = platform_with(answer)
    assert platform is None and not status.loaded
    assert "platform_info" in status.reason and "INVALID_VALUE" in status.reason, status.reason
