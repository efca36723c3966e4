"""Host-backend variants for running the conformance kit against (issue 34).

``DeviceOnlyBackend``: the host backend with no host-visible memory, as a GPU without managed
memory or a device in another process: ``mem_alloc`` (and ``mem_alloc_aligned``) answer
UNSUPPORTED for MANAGED and HOST, which ``DeviceOnlyCapabilities`` declares. The kit must check
every result through ``olMemcpy`` on it.

``EventErrorsDroppedBackend``: the host backend with a planted defect: ``sync_event`` waits for
the event but drops the asynchronous errors of the work before it. A kit case must fail on it.

``SlowTeardownBackend``: the host backend whose ``deinit`` waits out a 6 s timeout (a first
version of a remote backend did, per final ``olShutDown``): the kit's teardown bound fails.
"""

from __future__ import annotations

import time
from typing import Any

from offload import AllocType, ErrorCode, OffloadError, hookimpl
from offload.testing import Capabilities
from offload_host import HostBackend
from offload_host.conformance import HostCapabilities


def _device_only(alloc_type: AllocType) -> None:
    if alloc_type is not AllocType.DEVICE:
        raise OffloadError(ErrorCode.UNSUPPORTED, f"this device has no host-visible memory ({alloc_type.name})")


class DeviceOnlyBackend(HostBackend):  # type: ignore[misc]
    @hookimpl
    def mem_alloc(self, device: Any, alloc_type: AllocType, size: int) -> int:
        _device_only(alloc_type)
        return int(super().mem_alloc(device, alloc_type, size))

    @hookimpl
    def mem_alloc_aligned(self, device: Any, alloc_type: AllocType, size: int, alignment: int) -> int:
        _device_only(alloc_type)
        return int(super().mem_alloc_aligned(device, alloc_type, size, alignment))


class DeviceOnlyCapabilities(HostCapabilities):  # type: ignore[misc]
    managed_memory = False
    host_memory = False


class EventErrorsDroppedBackend(HostBackend):  # type: ignore[misc]
    @hookimpl
    def sync_event(self, device: Any, event: Any) -> None:
        event.wait()  # the defect: the errors of the work before the event are not raised


EventErrorsDroppedCapabilities: type[Capabilities] = HostCapabilities


class SlowTeardownBackend(HostBackend):  # type: ignore[misc]
    @hookimpl
    def deinit(self) -> None:
        time.sleep(6.0)  # the defect: a timeout waited out at every final olShutDown
        super().deinit()


SlowTeardownCapabilities: type[Capabilities] = HostCapabilities
