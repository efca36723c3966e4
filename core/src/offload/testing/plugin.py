"""The pytest plugin of the conformance kit (``pytest11`` entry point ``offload``).

It only acts on tests marked ``offload_conformance`` (every test of ``offload.testing.suite``);
a session that collects none never initialises the library. For the first marked test that asks
for ``device``, ``pytest_generate_tests`` calls ``olInit`` once, lists the devices with
``olIterateDevices`` and keeps that reference for the whole session: ``ol_session`` shares it and
``pytest_unconfigure`` (a config cleanup) gives it back with one ``olShutDown``.

Fixtures: ``ol_session`` (the device list), ``device`` (parametrised, ids ``<platform>_<index>``,
filtered by ``OFFLOAD_TEST_PLATFORM``), ``platform``, ``host_device``, ``capabilities``,
``queue``, ``program_binary``, ``load_program``, ``alloc``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PLATFORM_ENV = "OFFLOAD_TEST_PLATFORM"
MARKER = "offload_conformance"


class _Session:
    """The session's olInit reference and its device list (made at most once per config)."""

    def __init__(self) -> None:
        self.started = False
        self.holding = False  # one olInit reference is held
        self.error: BaseException | None = None
        self.devices: list[tuple[str, Any]] = []  # (id, Device), every device
        self.selected: list[tuple[str, Any]] = []  # filtered by OFFLOAD_TEST_PLATFORM

    def start(self) -> None:
        if self.started:
            if self.error is not None:
                raise self.error
            return
        self.started = True
        import offload as ol

        try:
            ol.olInit()
        except BaseException as exc:
            self.error = exc
            raise
        self.holding = True
        try:
            self._list_devices(ol)
        except BaseException as exc:
            self.error = exc
            raise

    def _list_devices(self, ol: Any) -> None:
        found: list[Any] = []
        ol.olIterateDevices(lambda dev, acc: acc.append(dev) or True, found)
        counts: dict[str, int] = {}
        platform_names: list[str] = []
        for dev in found:
            platform = ol.olGetDeviceInfo(dev, ol.DeviceInfo.PLATFORM)
            name = ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME)
            index = counts.get(name, 0)
            counts[name] = index + 1
            self.devices.append((f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{index}", dev))
            platform_names.append(name.lower())
        wanted = os.environ.get(PLATFORM_ENV)
        if wanted is None or not wanted.strip():
            self.selected = list(self.devices)
        else:
            names = {n.strip().lower() for n in wanted.split(",") if n.strip()}
            self.selected = [entry for entry, name in zip(self.devices, platform_names) if name in names]

    def stop(self) -> None:
        if self.holding:
            self.holding = False
            import offload as ol

            ol.olShutDown()


_SESSION_KEY = pytest.StashKey[_Session]()


def _session(config: pytest.Config) -> _Session:
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        session = config.stash[_SESSION_KEY] = _Session()
        config.add_cleanup(session.stop)
    return session


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a test of the offload conformance suite (parametrised over devices)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames or metafunc.definition.get_closest_marker(MARKER) is None:
        return
    session = _session(metafunc.config)
    session.start()
    ids = [i for i, _ in session.selected]
    metafunc.parametrize("device", ids, ids=ids, indirect=True)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ol_session(request: pytest.FixtureRequest) -> list[Any]:
    """The session's olInit reference (one olInit, one olShutDown at the end): every device."""
    session = _session(request.config)
    session.start()
    return [d for _, d in session.devices]


@pytest.fixture
def device(request: pytest.FixtureRequest, ol_session: list[Any]) -> Any:
    """The device under test (parametrised over every selected device)."""
    key = getattr(request, "param", None)
    if key is None:
        pytest.fail("the 'device' fixture is only parametrised for tests marked offload_conformance")
    for ident, dev in _session(request.config).devices:
        if ident == key:
            return dev
    pytest.fail(f"device {key!r} is not present any more")


@pytest.fixture
def platform(device: Any) -> Any:
    """The platform of the device under test."""
    import offload as ol

    return ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)


@pytest.fixture
def host_device(ol_session: list[Any]) -> Any:
    """The first device whose platform backend is HOST (host memory); skip when there is none."""
    import offload as ol

    for dev in ol_session:
        platform = ol.olGetDeviceInfo(dev, ol.DeviceInfo.PLATFORM)
        if ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST:
            return dev
    pytest.skip("no device of a HOST platform (host memory) is available")


@pytest.fixture
def capabilities(platform: Any) -> Any:
    """The ``Capabilities`` of the device's platform (register_capabilities / entry point)."""
    import offload as ol
    from offload.testing import capabilities_for

    return capabilities_for(ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME))


@pytest.fixture
def queue(device: Any) -> Iterator[Any]:
    """A queue of the device under test, synchronised and destroyed after the test."""
    import offload as ol

    q = ol.olCreateQueue(device)
    yield q
    try:
        ol.olSyncQueue(q)
    finally:
        ol.olDestroyQueue(q)


@pytest.fixture
def program_binary(capabilities: Any) -> Callable[[str], bytes]:
    """``program_binary(name)``: the bytes of a test program; skips the test when there are none."""

    def get(name: str) -> bytes:
        data = capabilities.binary(name)
        if data is None:
            pytest.skip(f"{capabilities!r} provides no binary of the test program {name!r}")
        return data

    return get


@pytest.fixture
def load_program(device: Any, program_binary: Callable[[str], bytes]) -> Iterator[Callable[[str], Any]]:
    """``load_program(name)``: olCreateProgram of a test program; destroyed after the test."""
    import offload as ol

    made: list[Any] = []

    def load(name: str) -> Any:
        prog = ol.olCreateProgram(device, program_binary(name))
        made.append(prog)
        return prog

    yield load
    for prog in made:
        try:
            ol.olDestroyProgram(prog)
        except ol.OffloadError as exc:
            if exc.code != ol.ErrorCode.INVALID_ARGUMENT:  # already destroyed by the test
                raise


@pytest.fixture
def alloc(device: Any, capabilities: Any) -> Iterator[Callable[..., int]]:
    """``alloc(size, alloc_type=MANAGED)``: olMemAlloc on the device, freed after the test.

    Skips when the capabilities lack MANAGED (``managed_memory``) or HOST (``host_memory``) memory.
    """
    import offload as ol

    made: list[int] = []

    def allocate(size: int, alloc_type: Any = None) -> int:
        kind = ol.AllocType.MANAGED if alloc_type is None else ol.AllocType(alloc_type)
        if kind is ol.AllocType.MANAGED and not capabilities.managed_memory:
            pytest.skip("capabilities.managed_memory is False")
        if kind is ol.AllocType.HOST and not capabilities.host_memory:
            pytest.skip("capabilities.host_memory is False")
        address = ol.olMemAlloc(device, kind, size)
        made.append(address)
        return address

    yield allocate
    for address in made:
        ol.olMemFree(address)
