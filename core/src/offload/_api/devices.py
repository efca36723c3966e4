"""Platforms and devices: ``olIterateDevices`` and the platform and device info queries, with the
device properties the core answers itself where a backend gives none (``hookspecs.get_device_info``)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from .._values import info as _info
from .common import bytes_arg, call_each, callback_arg, fail
from .._values.enums import DeviceFpCapabilityFlag, DeviceInfo, DeviceType, ErrorCode, PlatformInfo, members_at
from .._values.errors import OffloadError
from .._core.handles import Device, Platform
from .._core.session import Session

OL_VERSION = "v0.0.1"
_R1_COUNT = len(members_at(DeviceInfo, "r1"))  # an int above R1's device info numbers is read at the session's level
PLATFORM_VENDOR = "Unknown platform vendor"


def olIterateDevices(ctx: Session, callback: Callable[[Device, Any], bool], user_data: Any) -> None:
    """Call ``callback`` per device; it may call any function, the final ``olShutDown`` included."""
    callback_arg(callback)
    call_each(list(ctx.devices), callback, user_data)


def olIteratePlatforms(ctx: Session, callback: Callable[[Platform, Any], bool], user_data: Any) -> None:
    """Call ``callback`` per platform (the host platform last, as devices are ordered)."""
    callback_arg(callback)
    call_each(list(ctx.platforms), callback, user_data)


def olIterateCompatibleDevices(ctx: Session, data: Any, callback: Callable[[Device, Any], bool], user_data: Any) -> None:
    """Call ``callback`` per device whose backend says it could load ``data`` (``is_valid_binary``)."""
    callback_arg(callback)
    image = bytes_arg(data, "ProgData")
    compatible = [
        d for d in list(ctx.devices)
        if image and "is_valid_binary" in d.backend.implemented and d.backend.is_valid_binary(d.native, image)
    ]
    call_each(compatible, callback, user_data)


def olPlatformRegisterRPCCallback(ctx: Session, platform: Platform, callback: Any) -> None:
    """Refused: liboffload's device-side libc RPC needs the platform's RPC server."""
    raise fail(
        ErrorCode.UNSUPPORTED,
        f"olPlatformRegisterRPCCallback: platform {platform.name!r} has no device-side libc RPC server "
        "(offload runs no GPU libc), so there is no RPC traffic to hand a callback",
    )


def platform_info(ctx: Session, platform: Platform, prop: Any) -> tuple[Any, _info.Kind]:
    prop = _info.lookup(_info.PLATFORM_INFO, PlatformInfo, prop, "getPlatformInfo", ctx.api_level)
    kind = _info.PLATFORM_INFO[prop][0]
    if prop is PlatformInfo.NAME:
        return platform.name, kind
    if prop is PlatformInfo.VENDOR_NAME:  # the backend's (hookspecs.platform_info), else liboffload's
        return platform.backend.platform_values.get(prop, PLATFORM_VENDOR), kind
    if prop is PlatformInfo.VERSION:
        return platform.backend.platform_values.get(prop, OL_VERSION), kind
    return platform.kind, kind


def device_info(ctx: Session, device: Device, prop: Any) -> tuple[Any, _info.Kind]:
    # the cache is keyed by DeviceInfo (equal to its int): another enum class (PlatformInfo.NAME)
    # must not hit it, but go to lookup, which refuses it
    answer = device.info_cache.get(prop) if type(prop) is DeviceInfo or (type(prop) is int and prop < _R1_COUNT) else None
    if answer is None:
        prop = _info.lookup(_info.DEVICE_INFO, DeviceInfo, prop, "getDeviceInfo", ctx.api_level)
        kind, enum_type = _info.DEVICE_INFO[prop]
        value = _info.convert(kind, enum_type, device_info_value(device, prop), "OL_DEVICE_INFO_" + prop.name)
        answer = device.info_cache[prop] = (value, kind)
    return answer


def device_info_value(device: Device, prop: DeviceInfo) -> Any:
    """A device property: the backend's answer, else the default documented at
    ``hookspecs.get_device_info`` (liboffload R1's synthesised ones, plus those that follow from
    another answer), else ``UNIMPLEMENTED``."""
    try:
        return device.info[prop]
    except KeyError:
        pass
    if prop is DeviceInfo.TYPE:
        return DeviceType.HOST if device.is_host else DeviceType.GPU
    if prop is DeviceInfo.PLATFORM:
        return device.platform
    if prop in (DeviceInfo.SINGLE_FP_CONFIG, DeviceInfo.DOUBLE_FP_CONFIG):
        return DeviceFpCapabilityFlag(127)
    if prop is DeviceInfo.HALF_FP_CONFIG:
        return DeviceFpCapabilityFlag(0)
    if prop in (DeviceInfo.SINGLE_FP_SUPPORT, DeviceInfo.DOUBLE_FP_SUPPORT, DeviceInfo.HALF_FP_SUPPORT):
        return bool(device_info_value(device, DeviceInfo[prop.name.replace("_SUPPORT", "_CONFIG")]))
    if DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR <= prop <= DeviceInfo.NATIVE_VECTOR_WIDTH_HALF:
        return 0 if prop is DeviceInfo.NATIVE_VECTOR_WIDTH_HALF else 1
    if prop is DeviceInfo.MAX_MEM_ALLOC_SIZE and DeviceInfo.GLOBAL_MEM_SIZE in device.info:
        return device.info[DeviceInfo.GLOBAL_MEM_SIZE]
    if prop is DeviceInfo.PRODUCT_NAME and DeviceInfo.NAME in device.info:
        return device.info[DeviceInfo.NAME]
    if prop is DeviceInfo.COOPERATIVE_LAUNCH_SUPPORT:
        return "max_cooperative_groups" in device.backend.implemented
    if prop is DeviceInfo.DRIVER_ID:  # one driver per platform unless the backend says otherwise
        driver = f"{device.platform.name}:{device.info.get(DeviceInfo.DRIVER_VERSION, '')}"
        return zlib.crc32(driver.encode()) or 1
    raise OffloadError(
        ErrorCode.UNIMPLEMENTED,
        f"OL_DEVICE_INFO_{prop.name}: plugin did not provide a response for this information",
    )

