"""Discovery: devices and platforms as objects, info properties, the default device, and the
layer's own olInit reference living alongside the flat API."""

from __future__ import annotations

import pytest

import offload
from offload import DeviceInfo, ErrorCode, OffloadError, PlatformBackend, PlatformInfo
from offload._core.session import STATE
from offload.objects import _session


def test_devices_and_platforms_are_objects_with_readable_names() -> None:
    devices = offload.devices()
    platforms = offload.platforms()
    assert devices and platforms
    assert [d for p in platforms for d in p.devices] == devices
    assert platforms[-1].name == "host" and platforms[-1].backend is PlatformBackend.HOST
    for device in devices:
        assert device.name and device.name in repr(device)
        assert device.id == f"{device.platform.name}:{device.index}"
        assert device.id in repr(device)


def test_same_object_for_the_same_device() -> None:
    device = offload.devices()[0]
    assert offload.devices()[0] is device
    assert [p for p in offload.platforms() if p.name == device.platform.name] == [device.platform]
    assert next(p for p in offload.platforms() if p.name == device.platform.name) is device.platform


def test_every_info_property_as_mapping_and_attributes(device: offload.objects.Device) -> None:
    info = device.info
    handle = device.handle
    for prop in DeviceInfo:
        try:
            expected = offload.olGetDeviceInfo(handle, prop)
        except OffloadError as error:
            assert error.code in (ErrorCode.UNIMPLEMENTED, ErrorCode.UNSUPPORTED)
            assert prop not in info
            continue
        assert info[prop] == expected
    assert device.name == info[DeviceInfo.NAME]
    assert device.type is info[DeviceInfo.TYPE]
    assert device.vendor == info.get(DeviceInfo.VENDOR)
    assert device.num_compute_units == info.get(DeviceInfo.NUM_COMPUTE_UNITS)
    assert device.global_mem_size == info.get(DeviceInfo.GLOBAL_MEM_SIZE)
    assert device.max_work_group_size == info.get(DeviceInfo.MAX_WORK_GROUP_SIZE)
    assert "NAME" in repr(info) and len(info) == len(list(info))


def test_platform_info(device: offload.objects.Device) -> None:
    platform = device.platform
    assert platform.info[PlatformInfo.NAME] == platform.name
    assert platform.vendor_name == offload.olGetPlatformInfo(platform.handle, PlatformInfo.VENDOR_NAME)
    assert platform.version == offload.olGetPlatformInfo(platform.handle, PlatformInfo.VERSION)
    assert device in platform.devices


def test_filter_by_platform_and_backend() -> None:
    host = offload.devices("host")
    assert host and all(d.is_host for d in host)
    assert offload.devices(offload.platforms()[-1]) == host
    assert offload.devices(backend=PlatformBackend.HOST) == host
    assert offload.devices(backend="host") == host
    assert offload.devices("HOST") == offload.devices("Host") == host  # names ignore case, as backend names do
    assert offload.devices(backend="HOST") == offload.devices(backend=int(PlatformBackend.HOST)) == host
    with pytest.raises(ValueError) as raised:  # an OffloadValueError: OffloadError and ValueError
        offload.devices("no-such-platform")
    error = raised.value
    assert isinstance(error, OffloadError) and error.code is ErrorCode.INVALID_ARGUMENT
    assert "no platform 'no-such-platform': the platforms are " in error.details and "'host'" in error.details, error
    with pytest.raises(OffloadError) as info:
        offload.devices(backend="warp-drive")
    assert info.value.code is ErrorCode.INVALID_ENUMERATION and "warp-drive" in str(info.value)
    for bad in (5, b"host", ["host"]):
        with pytest.raises(TypeError) as typed:  # an OffloadTypeError
            offload.devices(bad)  # type: ignore[arg-type]
        assert isinstance(typed.value, OffloadError) and typed.value.code is ErrorCode.INVALID_ARGUMENT


def test_default_device_prefers_accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OFFLOAD_DEVICE", raising=False)
    assert offload.default_device() is offload.devices()[0]  # the host platform is listed last
    monkeypatch.setenv("OFFLOAD_DEVICE", "host")
    assert offload.default_device().is_host
    monkeypatch.setenv("OFFLOAD_DEVICE", "host:7")
    with pytest.raises(OffloadError) as info:
        offload.default_device()
    assert info.value.code is ErrorCode.INVALID_DEVICE and "host:7" in str(info.value)


@pytest.mark.parametrize("wanted", ["host:-1", "host:-0", "host:+0", "host:1_0", "host: 0", "host:", "host:x", "nowhere:0"])
def test_device_ids_other_than_platform_and_index_are_refused(monkeypatch: pytest.MonkeyPatch, wanted: str) -> None:
    """host:-1 picked the last device (Python's negative index); int() also took +0, 1_0 and ' 0'."""
    monkeypatch.setenv("OFFLOAD_DEVICE", wanted)
    with pytest.raises(ValueError) as info:
        offload.default_device()
    assert isinstance(info.value, OffloadError) and info.value.code is ErrorCode.INVALID_DEVICE
    assert repr(wanted) in info.value.details
    with pytest.raises(OffloadError):
        offload.Buffer(8, wanted)


def test_layer_holds_one_reference_alongside_the_flat_api() -> None:
    offload.olInit()  # the user's own reference
    devices = offload.devices()
    assert STATE.refcount == 2
    offload.olShutDown()  # the user's last call: the layer's reference keeps the session
    assert STATE.ctx is not None and devices[0].handle._ctx is STATE.ctx
    offload.devices()
    assert STATE.refcount == 1
    _session.release()
    assert STATE.ctx is None


def test_flat_api_over_release_makes_objects_stale_then_a_fresh_session() -> None:
    old = offload.devices()[0]
    offload.olShutDown()  # drops the layer's reference: the session ends
    assert STATE.ctx is None
    with pytest.raises(OffloadError):
        old.alloc(16)  # its session is gone: the next object takes a new reference first, then the stale handle fails
    fresh = offload.devices()[0]
    assert fresh is not old and fresh.handle._ctx is STATE.ctx
    with fresh.alloc(16) as buffer:
        assert buffer.size == 16


def test_as_device_accepts_flat_handles_and_ids() -> None:
    from offload.objects._discovery import as_device

    device = offload.devices("host")[0]
    assert as_device(device.handle) is device
    assert as_device("host:0") is device
    with pytest.raises(OffloadError) as info:
        as_device(3.5)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.INVALID_DEVICE


def test_importing_offload_stays_light() -> None:
    """The core needs no numpy: the layer imports it only when an Array is made. (Without the
    opencl backend: PyOpenCL, its driver binding, imports numpy itself.)"""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OFFLOAD_BACKENDS": "host,cuda,amdgpu"}
    code = "import sys, offload; offload.devices(); offload.Buffer(8).close(); print('numpy' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr
