"""Fixtures of the object layer's tests: each test starts and ends with the library idle."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import offload
import offload_host
from offload._core.session import STATE
from offload.objects._dlpack import exported_count

from objects_support import ECHO, ECHO_SIGNATURE, platform_ids, release_library


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "layouts(table): kernel layouts the test's reporting backend answers")


@pytest.fixture(autouse=True)
def idle_library() -> Iterator[None]:
    """The library is idle before and after every test; the layer's reference is dropped after it."""
    assert STATE.ctx is None, "a previous test left the library initialised"
    yield
    gc.collect()
    release_library()


@pytest.fixture(params=platform_ids())
def device(request: pytest.FixtureRequest) -> offload.objects.Device:
    """Every device present, as an object (the tests that take it run on each backend)."""
    return offload.objects.devices()[[d.id for d in offload.objects.devices()].index(request.param)]


@pytest.fixture
def host() -> offload.objects.Device:
    return offload.devices(backend="host")[0]


@pytest.fixture
def live_allocations() -> object:
    """A callable: how many allocations the current session's map holds."""
    return lambda: 0 if STATE.ctx is None else len(STATE.ctx.allocations)


@pytest.fixture
def saxpy_image() -> bytes:
    return offload_host.build_test_kernel("saxpy")


@pytest.fixture
def echo(host: offload.objects.Device) -> offload.Kernel:
    """The host kernel ``ECHO`` (objects_support), declared."""
    program = host.load_program(offload_host.build_program(ECHO, name="echo_memo"))
    return program.kernel("echo", ECHO_SIGNATURE)


@pytest.fixture
def no_exports_left() -> Iterator[None]:
    yield
    gc.collect()
    assert exported_count() == 0, "a DLPack export was never released"
