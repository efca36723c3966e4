"""Fixtures of the hardening tests: the in-process ``simdev`` backend next to the host backend."""

from __future__ import annotations

import collections.abc

import pytest

import offload as ol
from offload._core.session import STATE

import simdev
from simdev import offload_threads
from helpers import devices


@pytest.fixture
def sim_backend() -> collections.abc.Iterator[type]:
    """Registers simdev (the class: override it with ``sim_backend_class``) for one test."""
    yield simdev.SimBackend


@pytest.fixture
def sim_session(sim_backend: type) -> collections.abc.Iterator[tuple[ol.Device, ol.Device]]:
    """(simdev device, host device) in a session of this test; no rule broken, no thread left."""
    assert STATE.ctx is None, "a previous test left the library initialised"
    simdev.VIOLATIONS.clear()
    shutdown_errors: list[ol.OffloadError] = []
    ol.register_backend("simdev", sim_backend)
    try:
        ol.olInit()
        try:
            found = devices()
            sim = next(d for d in found if d.platform.name == "simdev")
            host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
            yield sim, host
        finally:
            while STATE.ctx is not None:  # every reference the test left; each error is kept
                try:
                    ol.olShutDown()
                except ol.OffloadError as error:
                    shutdown_errors.append(error)
    finally:
        ol.unregister_backend("simdev")
    # a test that expects an error of the final olShutDown calls it itself and checks the error
    assert not shutdown_errors, f"the session's olShutDown failed: {shutdown_errors}"
    assert not simdev.VIOLATIONS, simdev.VIOLATIONS
    assert not [i for i in simdev.IMAGES if i.loaded], "a simdev program outlived the final olShutDown"
    leftover = offload_threads()
    for thread in leftover:
        thread.join(5)
    assert not [t for t in leftover if t.is_alive()], leftover
