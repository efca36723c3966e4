"""6.2 init (olInit.cpp). The suite runs inside the plugin's initialised session, so these make
balanced olInit/olShutDown pairs on top of its reference; ``Uninitialized`` needs a session
without one and is left to project tests."""

from __future__ import annotations

from typing import Any

import offload as ol

from ._helpers import Base, implemented


def _still_works(devices: list[Any]) -> None:
    seen: list[Any] = []
    ol.olIterateDevices(lambda dev, acc: acc.append(dev) or True, seen)
    assert seen == devices, "the device list changed under balanced olInit/olShutDown pairs"
    for dev in devices:
        assert isinstance(ol.olGetDeviceInfo(dev, ol.DeviceInfo.NAME), str)
        if "create_queue" not in implemented(dev):
            continue
        queue = ol.olCreateQueue(dev)
        ol.olSyncQueue(queue)
        ol.olDestroyQueue(queue)


class TestInit(Base):
    def test_success(self, ol_session: list[Any]) -> None:
        ol.olInit()
        ol.olShutDown()
        _still_works(ol_session)

    def test_repeated_init(self, ol_session: list[Any]) -> None:
        for _ in range(10):
            ol.olInit()
            ol.olShutDown()
        _still_works(ol_session)

    def test_nested_init(self, ol_session: list[Any]) -> None:
        for _ in range(10):
            ol.olInit()
        for _ in range(10):
            ol.olShutDown()
        _still_works(ol_session)

    def test_handles_survive_nested_shutdown(self, ol_session: list[Any]) -> None:
        devices = list(ol_session)
        ol.olInit()
        queues = [ol.olCreateQueue(dev) for dev in devices if "create_queue" in implemented(dev)]
        ol.olShutDown()  # not the last reference: nothing may be released
        for q in queues:
            ol.olSyncQueue(q)
            ol.olDestroyQueue(q)
