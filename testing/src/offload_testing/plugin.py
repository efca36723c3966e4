"""The pytest plugin of the conformance kit (offload-testing's ``pytest11`` entry point ``offload``:
installing offload-core alone leaves other projects' pytest runs alone).

It only acts on tests marked ``offload_conformance`` (every test of ``offload_testing.suite``);
a session that collects none never initialises the library. At the first marked test that asks
for ``device``, ``pytest_generate_tests`` lists the devices once (``olInit``, ``olIterateDevices``,
``olShutDown``: balanced, nothing kept across collection) and parametrises ``device`` with their
ids. At run time ``ol_session`` holds one ``olInit`` reference per test module that uses the
suite (module scope, not session scope: the library is idle again before the project's next test
module, which may check that nothing left it initialised) and ``device`` maps each id back to a
live handle.

Fixtures: ``ol_session`` (the device list), ``device`` (parametrised, ids ``<platform>_<index>``,
filtered by ``OFFLOAD_TEST_PLATFORM``), ``platform``, ``host_device``, ``capabilities`` (resolved:
every flag a bool), ``queue``, ``program_binary``, ``load_program``, ``alloc``, ``device_memory``
(DEVICE buffers written and read only through ``olMemcpy``: how every result is checked). Each
skips, naming the capability flag, why it is False and what the case needs it for, when the
feature it needs is absent.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import offload as ol
from offload.testing import capabilities_for

PLATFORM_ENV = "OFFLOAD_TEST_PLATFORM"
MARKER = "offload_conformance"


def _identify(ol: Any, devices: list[Any]) -> list[tuple[str, str]]:
    """``(id, platform name)`` of each device: ids ``<platform>_<index within the platform>``."""
    counts: dict[str, int] = {}
    found = []
    for dev in devices:
        platform = ol.olGetDeviceInfo(dev, ol.DeviceInfo.PLATFORM)
        name = ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME)
        index = counts.get(name, 0)
        counts[name] = index + 1
        found.append((f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{index}", name))
    return found


def _all_devices(ol: Any) -> list[Any]:
    found: list[Any] = []
    ol.olIterateDevices(lambda dev, acc: acc.append(dev) or True, found)
    return found


def _selected_ids() -> list[str]:
    """The ids of the devices under test: one balanced olInit/olShutDown, nothing kept."""
    ol.olInit()
    try:
        identified = _identify(ol, _all_devices(ol))
    finally:
        ol.olShutDown()
    wanted = os.environ.get(PLATFORM_ENV)
    if wanted is None or not wanted.strip():
        return [ident for ident, _ in identified]
    names = {n.strip().lower() for n in wanted.split(",") if n.strip()}
    return [ident for ident, name in identified if name.lower() in names]


_IDS_KEY = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a test of the offload conformance suite (parametrised over devices)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames or metafunc.definition.get_closest_marker(MARKER) is None:
        return
    ids = metafunc.config.stash.get(_IDS_KEY, None)
    if ids is None:  # discovered once per test session, at the first suite test that needs it
        ids = metafunc.config.stash[_IDS_KEY] = _selected_ids()
    metafunc.parametrize("device", ids, ids=ids, indirect=True)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ol_session() -> Iterator[list[Any]]:
    """One olInit for the test module using the suite, one olShutDown after its last test
    (so the project's other test modules find the library as they left it): every device."""
    ol.olInit()
    try:
        yield _all_devices(ol)
    finally:
        ol.olShutDown()


@pytest.fixture
def device(request: pytest.FixtureRequest, ol_session: list[Any]) -> Any:
    """The device under test (parametrised over every selected device)."""
    key = getattr(request, "param", None)
    if key is None:
        pytest.fail("the 'device' fixture is only parametrised for tests marked offload_conformance")
    for (ident, _), dev in zip(_identify(ol, ol_session), ol_session):
        if ident == key:
            return dev
    pytest.fail(f"device {key!r} was listed at collection but is not present now")


@pytest.fixture
def platform(device: Any) -> Any:
    """The platform of the device under test."""
    return ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)


@pytest.fixture
def host_device(ol_session: list[Any]) -> Any:
    """The first device whose platform backend is HOST (host memory); skip when there is none."""
    for dev in ol_session:
        platform = ol.olGetDeviceInfo(dev, ol.DeviceInfo.PLATFORM)
        if ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST:
            return dev
    pytest.skip("no device of a HOST platform (host memory) is loaded: install offload-host to test copies")


@pytest.fixture
def capabilities(platform: Any) -> Any:
    """The resolved ``Capabilities`` of the device's platform (register_capabilities / entry
    point), every flag a bool: ``None`` flags derived from the hooks the backend implements."""
    declared = capabilities_for(ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME))
    return declared.resolve(implemented_hooks(platform))


def implemented_hooks(platform: Any) -> frozenset[str]:
    """The hooks of ``offload.hookspecs`` that the platform's backend implements."""
    return frozenset(platform.backend.implemented)


def require(capabilities: Any, flag: str, purpose: str = "") -> None:
    """Skip the test, naming the flag, why it is False and (``purpose``) what the case needs it
    for, unless ``capabilities.<flag>``."""
    if not getattr(capabilities, flag):
        needed = f" and the case {purpose}" if purpose else ""
        pytest.skip(f"{capabilities!r}: {capabilities.why_absent(flag)}{needed}")


@pytest.fixture
def queue(device: Any, capabilities: Any) -> Iterator[Any]:
    """A queue of the device under test, synchronised and destroyed after the test
    (skips without ``capabilities.queues``)."""
    require(capabilities, "queues")
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
        require(capabilities, "programs")
        data = capabilities.binary(name)
        if data is None:
            pytest.skip(f"{capabilities!r}: capabilities.binary({name!r}) provides no binary of this test program")
        return bytes(data)

    return get


@pytest.fixture
def load_program(device: Any, program_binary: Callable[[str], bytes]) -> Iterator[Callable[[str], Any]]:
    """``load_program(name)``: olCreateProgram of a test program; destroyed after the test."""
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
    """``alloc(size, alloc_type=DEVICE)``: olMemAlloc on the device, freed after the test.

    Skips without ``memory``, or without MANAGED (``managed_memory``) or HOST (``host_memory``)
    memory when that kind is asked for: a case asks for those only when host access to them is
    what it tests.
    """
    made: list[int] = []

    def allocate(size: int, alloc_type: Any = None) -> int:
        kind = ol.AllocType.DEVICE if alloc_type is None else ol.AllocType(alloc_type)
        require(capabilities, "memory", "allocates device memory")
        if kind is ol.AllocType.MANAGED:
            require(capabilities, "managed_memory", "tests MANAGED memory the host reads and writes")
        if kind is ol.AllocType.HOST:
            require(capabilities, "host_memory", "tests HOST memory the host reads and writes")
        address = ol.olMemAlloc(device, kind, size)
        made.append(address)
        return address

    yield allocate
    for address in made:
        ol.olMemFree(address)


class DeviceMemory:
    """DEVICE memory of the device under test that the kit touches only through the API: written
    and read with synchronous ``olMemcpy`` to and from host memory (``host_device``), so that a
    result is checked the same way on every backend, one whose memory the host cannot reach
    included."""

    def __init__(self, device: Any, host_device: Any, allocate: Callable[..., int]) -> None:
        self.device, self.host_device, self._allocate = device, host_device, allocate

    def alloc(self, size: int, fill: int = 0) -> int:
        """A DEVICE buffer of ``size`` bytes, each set to ``fill`` (freed after the test)."""
        address = self._allocate(size, ol.AllocType.DEVICE)
        self.write(address, bytes([fill]) * size)
        return address

    def write(self, address: int, data: bytes) -> None:
        """Copy ``data`` to ``address`` (synchronous ``olMemcpy`` from host memory)."""
        source = ctypes.create_string_buffer(bytes(data), len(data))
        ol.olMemcpy(None, address, self.device, ctypes.addressof(source), self.host_device, len(data))

    def read(self, address: int, size: int) -> bytes:
        """``size`` bytes at ``address`` (synchronous ``olMemcpy`` to host memory)."""
        target = ctypes.create_string_buffer(size)
        ol.olMemcpy(None, ctypes.addressof(target), self.host_device, address, self.device, size)
        return target.raw

    def u32s(self, address: int, count: int) -> list[int]:
        """``count`` uint32 at ``address``."""
        return list(struct.unpack(f"<{count}I", self.read(address, 4 * count)))


@pytest.fixture
def device_memory(device: Any, capabilities: Any, alloc: Callable[..., int], request: pytest.FixtureRequest) -> DeviceMemory:
    """``DeviceMemory`` of the device under test: skips without ``memory`` or ``copies`` (the
    case reads its result back with ``olMemcpy``) or a HOST device (host memory)."""
    require(capabilities, "memory", "allocates device memory")
    require(capabilities, "copies", "reads its result back with olMemcpy")
    host = request.getfixturevalue("host_device")
    return DeviceMemory(device, host, alloc)
