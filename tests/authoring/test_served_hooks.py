"""Capabilities the device decides at ``init``: the ``served_hooks`` hook (issue 34 part 2).

A backend defines every hook it might serve and names, after ``init``, those it does: the others
answer ``OL_ERRC_UNSUPPORTED`` naming the backend and the hook, and the conformance kit's
``Capabilities`` follow the answer. The backend under test is the host backend, registered as
"narrowed", whose ``served_hooks`` answer comes from a class attribute set per test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload import hookimpl
from offload.testing import Capabilities
from offload_host import HostBackend

from helpers import devices

NAME = "narrowed"


class Narrowed(HostBackend):  # type: ignore[misc]
    served: Any = None
    asked = 0

    @hookimpl
    def served_hooks(self) -> Any:
        type(self).asked += 1
        return self.served


@pytest.fixture
def narrowed(request: pytest.FixtureRequest) -> Iterator[Any]:
    Narrowed.served, Narrowed.asked = request.param, 0
    ol.register_backend(NAME, Narrowed)
    ol.olInit()
    try:
        yield next((d for d in devices() if d.platform.name == NAME), None)
    finally:
        ol.olShutDown()
        ol.unregister_backend(NAME)


SERVED = ("mem_alloc", "mem_free", "data_submit", "data_retrieve", "create_queue")


@pytest.mark.parametrize("narrowed", [SERVED], indirect=True)
def test_unserved_hooks_answer_unsupported(narrowed: Any) -> None:
    assert narrowed is not None and Narrowed.asked == 1
    implemented = narrowed.platform.backend.implemented
    assert set(SERVED) <= implemented and "create_event" not in implemented and "data_fill" not in implemented
    address = ol.olMemAlloc(narrowed, ol.AllocType.DEVICE, 64)
    try:
        with pytest.raises(ol.OffloadError) as info:
            ol.olMemFill(None, address, b"\x01", 64)
        assert info.value.code is ol.ErrorCode.UNSUPPORTED
        assert NAME in info.value.details and "data_fill" in info.value.details and "served_hooks" in info.value.details
        queue = ol.olCreateQueue(narrowed)
        with pytest.raises(ol.OffloadError) as info:
            ol.olCreateEvent(queue)
        assert info.value.code is ol.ErrorCode.UNSUPPORTED and "create_event" in info.value.details
        ol.olDestroyQueue(queue)
    finally:
        ol.olMemFree(address)
    resolved = Capabilities().resolve(implemented)
    assert resolved.memory and resolved.copies and resolved.queues
    assert not resolved.fill and not resolved.events and not resolved.kernel_launch
    assert "data_fill" in resolved.why_absent("fill")


@pytest.mark.parametrize("narrowed", [None], indirect=True)
def test_none_serves_every_hook(narrowed: Any) -> None:
    assert Narrowed.asked == 1
    assert narrowed.platform.backend.implemented >= {"data_fill", "create_event", "launch_kernel"}
    address = ol.olMemAlloc(narrowed, ol.AllocType.DEVICE, 8)
    ol.olMemFill(None, address, b"\x07", 8)
    ol.olMemFree(address)


@pytest.mark.filterwarnings("ignore::offload.OffloadBackendWarning")
@pytest.mark.parametrize("narrowed", [("mem_alloc", "no_such_hook"), "mem_alloc"], indirect=True)
def test_a_wrong_answer_skips_the_backend(narrowed: Any) -> None:
    """A name the backend does not define, or a str instead of names: the backend is skipped
    (released, its reason kept) and the others load."""
    assert narrowed is None
    status = {s.name: s for s in ol.backend_status()}
    assert not status[NAME].loaded and "served_hooks" in (status[NAME].reason or ""), status[NAME]
    assert status["host"].loaded
