"""Backend loading: selection, isolation of broken backends, strict mode, error joining, order.

The failing backends here are real backends registered through the public plugin API
(``offload.register_backend`` + ``offload.hookimpl``): they fail on purpose in one lifecycle step.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload._core.session import STATE

from helpers import devices

E = ol.ErrorCode


class MemoryBackend:
    """A minimal working backend: one device whose memory is Python-owned bytearrays."""

    def __init__(self, name: str = "mem", fail_deinit: ol.ErrorCode | None = None, fail_init: bool = False) -> None:
        self.name, self.fail_deinit, self.fail_init = name, fail_deinit, fail_init
        self.events: list[str] = []
        self.buffers: dict[int, Any] = {}

    @ol.hookimpl
    def init(self) -> list[str]:
        if self.fail_init:
            raise RuntimeError(f"{self.name}: driver missing")
        return ["dev0"]

    @ol.hookimpl
    def deinit(self) -> None:
        self.events.append("deinit")
        if self.fail_deinit is not None:
            raise ol.OffloadError(self.fail_deinit, f"{self.name} deinit failed")

    @ol.hookimpl
    def get_device_info(self, device: str) -> dict[ol.DeviceInfo, Any]:
        return {ol.DeviceInfo.NAME: f"{self.name}-{device}", ol.DeviceInfo.VENDOR: "test"}

    @ol.hookimpl
    def load_binary(self, device: str, data: bytes) -> bytes:
        return data

    @ol.hookimpl
    def unload_binary(self, device: str, image: bytes) -> None:
        self.events.append("unload")

    @ol.hookimpl
    def synchronize(self, device: str, queue: Any, release: bool) -> None:
        self.events.append(f"sync release={release}")

    @ol.hookimpl
    def has_pending_work(self, queue: Any) -> bool:  # a subset of the spec's arguments
        return False

    @ol.hookimpl
    def mem_alloc(self, device: str, alloc_type: ol.AllocType, size: int) -> int:
        import ctypes

        buffer = (ctypes.c_char * size)()
        address = ctypes.addressof(buffer)
        self.buffers[address] = buffer
        return address

    @ol.hookimpl
    def mem_free(self, device: str, address: int) -> None:
        del self.buffers[address]
        self.events.append("free")


@pytest.fixture
def registered() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        ol.unregister_backend(name)
    assert STATE.ctx is None


def _register(names: list[str], name: str, backend: Any) -> None:
    ol.register_backend(name, backend)
    names.append(name)


def _installed() -> list[str]:
    """The platforms of the installed backends that have devices (host; opencl where PoCL is
    installed), as ``devices()`` orders them: what a session holds besides those registered here."""
    ol.olInit()
    try:
        return list(dict.fromkeys(d.platform.name for d in devices()))
    finally:
        ol.olShutDown()


def test_host_platform_is_last_and_order_is_stable(registered: list[str]) -> None:
    installed = _installed()
    _register(registered, "zeta", lambda: MemoryBackend("zeta"))
    _register(registered, "alpha", lambda: MemoryBackend("alpha"))
    ol.olInit()
    try:
        names = list(dict.fromkeys(d.platform.name for d in devices()))
        assert names == sorted({"alpha", "zeta", *installed} - {"host"}) + ["host"]
        platform = ol.olGetDeviceInfo(devices()[0], ol.DeviceInfo.PLATFORM)
        assert ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) is ol.PlatformBackend.UNKNOWN
        assert ol.olGetDeviceInfo(devices()[0], ol.DeviceInfo.TYPE) is ol.DeviceType.GPU
    finally:
        ol.olShutDown()


def test_selection_by_environment(registered: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _register(registered, "alpha", lambda: MemoryBackend("alpha"))
    monkeypatch.setenv("OFFLOAD_BACKENDS", "alpha")
    ol.olInit()
    try:
        assert [d.platform.name for d in devices()] == ["alpha"]
        assert [s.name for s in ol.backend_status()] == ["alpha"]
    finally:
        ol.olShutDown()


def test_no_backend_selected_gives_zero_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_BACKENDS", "")
    ol.olInit()
    try:
        assert devices() == []
    finally:
        ol.olShutDown()


class _BadSignature:
    @ol.hookimpl
    def init(self, nonsense: int) -> list[str]:  # not an argument of the spec
        return []


class _MissingRequired:
    @ol.hookimpl
    def init(self) -> list[str]:
        return ["d"]


class _UnknownHook(MemoryBackend):
    @ol.hookimpl
    def launch_kernels(self, device: str) -> None:  # a typo of launch_kernel
        pass


def _raise_on_factory() -> Any:
    raise ImportError("No module named 'cuda'")


@pytest.mark.parametrize(
    ("backend", "reason"),
    [
        (_raise_on_factory, "No module named 'cuda'"),
        (lambda: MemoryBackend("broken", fail_init=True), "driver missing"),
        (_BadSignature, "nonsense"),
        (_MissingRequired, "lacks required hooks"),
        (_UnknownHook, "launch_kernels"),
    ],
    ids=["import", "init", "signature", "required", "unknown-hook"],
)
def test_broken_backend_is_skipped_with_reason(registered: list[str], backend: Any, reason: str) -> None:
    installed = _installed()
    _register(registered, "broken", backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ol.olInit()
    try:
        assert list(dict.fromkeys(d.platform.name for d in devices())) == installed, "the other backends must still work"
        (status,) = [s for s in ol.backend_status() if s.name == "broken"]
        assert not status.loaded and reason in status.reason
    finally:
        ol.olShutDown()


def test_strict_mode_raises_and_stays_uninitialised(registered: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _register(registered, "broken", lambda: MemoryBackend("broken", fail_init=True))
    monkeypatch.setenv("OFFLOAD_BACKENDS_STRICT", "1")
    with pytest.raises(ol.OffloadError) as info:
        ol.olInit()
    assert "driver missing" in str(info.value)
    assert STATE.ctx is None


def test_shutdown_joins_every_error_and_deinitialises_every_backend(registered: list[str]) -> None:
    first = MemoryBackend("a", fail_deinit=E.BACKEND_FAILURE)
    second = MemoryBackend("b", fail_deinit=E.HOST_IO)
    _register(registered, "a", first)
    _register(registered, "b", second)
    ol.olInit()
    a_dev, b_dev = devices()[:2]
    ptr = ol.olMemAlloc(a_dev, ol.AllocType.DEVICE, 32)  # left allocated on purpose
    program = ol.olCreateProgram(b_dev, b"image")  # left loaded on purpose
    with pytest.raises(ol.OffloadError) as info:
        ol.olShutDown()
    error = info.value
    assert error.code is E.HOST_IO, "the joined error carries the last error's code"
    assert [e.code for e in error.errors] == [E.BACKEND_FAILURE, E.HOST_IO]
    assert "a deinit failed" in str(error) and "b deinit failed" in str(error)
    assert first.events == ["free", "deinit"]
    assert second.events == ["unload", "deinit"]
    assert STATE.ctx is None
    with pytest.raises(ol.OffloadError) as stale:
        ol.olMemFree(ptr)
    assert stale.value.code is E.UNINITIALIZED
    del program


def test_missing_optional_hook_is_unsupported(registered: list[str]) -> None:
    _register(registered, "mem", MemoryBackend)
    ol.olInit()
    try:
        device = devices()[0]
        with pytest.raises(ol.OffloadError) as info:
            ol.olCreateQueue(device)
        assert info.value.code is E.UNSUPPORTED
        assert "'mem'" in info.value.details and "create_queue" in info.value.details
    finally:
        ol.olShutDown()


def test_backend_exceptions_map_to_unknown_with_cause(registered: list[str]) -> None:
    class Flaky(MemoryBackend):
        @ol.hookimpl
        def load_binary(self, device: str, data: bytes) -> bytes:
            raise KeyError("boom")

    _register(registered, "flaky", Flaky)
    ol.olInit()
    try:
        with pytest.raises(ol.OffloadError) as info:
            ol.olCreateProgram(devices()[0], b"x")
        assert info.value.code is E.UNKNOWN and "KeyError" in info.value.details
        assert isinstance(info.value.__cause__, KeyError)
    finally:
        ol.olShutDown()


class _InfoFails(MemoryBackend):
    @ol.hookimpl
    def get_device_info(self, device: str) -> dict[ol.DeviceInfo, Any]:
        raise ol.OffloadError(E.BACKEND_FAILURE, "no device properties")


def test_device_info_failure_releases_the_backend_and_keeps_every_error(
    registered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = _installed()
    backend = _InfoFails("info", fail_deinit=E.HOST_IO)
    _register(registered, "info", backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ol.OffloadBackendWarning)
        ol.olInit()
    try:
        (status,) = [s for s in ol.backend_status() if s.name == "info"]
        assert not status.loaded
        assert "no device properties" in status.reason and "info deinit failed" in status.reason
        assert backend.events == ["deinit"], "an initialised backend must be released when skipped"
        assert list(dict.fromkeys(d.platform.name for d in devices())) == installed
    finally:
        ol.olShutDown()
    monkeypatch.setenv("OFFLOAD_BACKENDS_STRICT", "1")
    with pytest.raises(ol.OffloadError) as info:
        ol.olInit()
    assert [e.code for e in info.value.errors] == [E.BACKEND_FAILURE, E.HOST_IO]
    assert STATE.ctx is None


def test_a_skipped_backend_is_warned_about_once(registered: list[str]) -> None:
    _register(registered, "warned-once", lambda: MemoryBackend("warned-once", fail_init=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            ol.olInit()
            ol.olShutDown()
    mine = [w for w in caught if issubclass(w.category, ol.OffloadBackendWarning) and "warned-once" in str(w.message)]
    assert len(mine) == 1 and "driver missing" in str(mine[0].message)
