"""olInit / olShutDown: reference counting, re-init, UNINITIALIZED everywhere, many threads."""

from __future__ import annotations

import threading

import pytest

import offload as ol
from offload._api.table import FUNCTIONS
from offload._core.session import STATE

from helpers import devices, run_in_threads


def _dummy_args(fn) -> list[object]:
    return [None for _ in fn.params]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.name)
def test_every_function_is_uninitialized_before_olinit(fn) -> None:
    assert STATE.ctx is None
    with pytest.raises(ol.OffloadError) as info:
        getattr(ol, fn.name)(*_dummy_args(fn))
    assert info.value.code is ol.ErrorCode.UNINITIALIZED
    assert "olInit" in info.value.details


def test_shutdown_without_init_is_uninitialized() -> None:
    with pytest.raises(ol.OffloadError) as info:
        ol.olShutDown()
    assert info.value.code is ol.ErrorCode.UNINITIALIZED


def test_reference_counting() -> None:
    ol.olInit()
    ol.olInit()
    ctx = STATE.ctx
    ol.olShutDown()
    assert STATE.ctx is ctx, "the first olShutDown of two must keep the library alive"
    assert devices()
    ol.olShutDown()
    assert STATE.ctx is None
    with pytest.raises(ol.OffloadError):
        devices()


def test_repeated_init_starts_afresh_and_old_handles_die() -> None:
    stale = []
    for _ in range(10):
        ol.olInit()
        (device, *_) = devices()
        for old in stale:
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetDeviceInfo(old, ol.DeviceInfo.NAME)
            assert info.value.code is ol.ErrorCode.INVALID_DEVICE
        assert ol.olGetDeviceInfo(device, ol.DeviceInfo.NAME)
        stale.append(device)
        ol.olShutDown()
    assert len({id(d) for d in stale}) == len(stale)


def test_init_and_shutdown_from_many_threads() -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(20)

    def worker() -> None:
        try:
            barrier.wait()
            for _ in range(25):
                ol.olInit()
                assert devices()
                ol.olShutDown()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    run_in_threads(worker, 20)
    assert not errors, errors[:3]
    assert STATE.ctx is None and STATE.refcount == 0


def test_no_thread_outlives_shutdown(host: ol.Device) -> None:
    before = threading.active_count()
    queues = [ol.olCreateQueue(host) for _ in range(8)]
    gate = threading.Event()
    for q in queues:
        ol.olLaunchHostFunction(q, lambda _: gate.wait(5))
    ol.olDestroyQueue(queues[0])  # busy: parked
    assert threading.active_count() >= before + 8
    gate.set()
    ol.olShutDown()
    assert STATE.ctx is None
    assert threading.active_count() == before


def test_handles_cannot_be_made_by_hand() -> None:
    for cls in (ol.Platform, ol.Device, ol.Queue, ol.Event, ol.Program, ol.Symbol):
        with pytest.raises(TypeError):
            cls()
