"""A lost device (hookspecs' contract, issue 34): every hook that needs the device raises
``OffloadError(BACKEND_FAILURE)``, ``has_pending_work`` included, and the core neither polls for
ever nor leaves the library half torn down: the call gets the error, and the final ``olShutDown``
reports it and releases the rest. In a child process (a wrong answer would hang)."""

from __future__ import annotations

import json

from helpers import DEVICE_OF

SCRIPT = r"""
import json
import offload as ol
from offload import ErrorCode, OffloadError, hookimpl
from offload_host import HostBackend
from offload._core.session import STATE

""" + DEVICE_OF + r"""
LOST = []

def lost(*_):
    if LOST:
        raise OffloadError(ErrorCode.BACKEND_FAILURE, "lostdev 0: the device is lost (link down)")

class LostDevice(HostBackend):
    @hookimpl
    def has_pending_work(self, device, queue):
        lost()
        return super().has_pending_work(device, queue)

    @hookimpl
    def synchronize(self, device, queue, release):
        lost()
        return super().synchronize(device, queue, release)

ol.register_backend("lostdev", LostDevice)
ol.olInit()
dev = device_of("lostdev")
queue = ol.olCreateQueue(dev)
address = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
LOST.append(True)
result = {}
try:
    ol.olMemFree(address)
    result["free"] = "SUCCESS"
except OffloadError as exc:
    result["free"] = exc.code.name
try:
    ol.olShutDown()
    result["shutdown"] = "SUCCESS"
except OffloadError as exc:
    result["shutdown"] = exc.code.name
    result["details"] = str(exc)
result["idle"] = STATE.ctx is None
print(json.dumps(result))
"""


def test_a_lost_device_fails_calls_and_shutdown_without_hanging(run_python) -> None:
    proc = run_python(SCRIPT)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["free"] == "BACKEND_FAILURE", result
    assert result["shutdown"] == "BACKEND_FAILURE" and "lost" in result["details"], result
    assert result["idle"] is True, result
