"""Use after free on the host device: its allocations have pages of their own, unmapped when
freed, so copies and fills into freed memory are refused (never a write into the C heap)."""

from __future__ import annotations

import json

CODE = r"""
import json, offload as ol
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = [d for d in found if d.platform.kind is ol.PlatformBackend.HOST][0]
results = {}
for size in (1, 64, 4096, 1 << 20):
    a = ol.olMemAlloc(host, ol.AllocType.DEVICE, size)
    b = ol.olMemAlloc(host, ol.AllocType.HOST, size)
    ol.olMemcpy(None, a, host, b, host, size)          # live: fine
    ol.olMemFree(a)
    queue = ol.olCreateQueue(host)
    outcomes = []
    for call in (
        lambda: ol.olMemcpy(None, a, host, b, host, min(size, 8)),   # into freed memory
        lambda: ol.olMemcpy(None, b, host, a, host, min(size, 8)),   # out of freed memory
        lambda: ol.olMemcpy(queue, a, host, b, host, min(size, 8)),  # queued, the same checks
        lambda: ol.olMemFill(queue, a, b"\1", min(size, 8)),
    ):
        try:
            call()
            outcomes.append("accepted")
        except ol.OffloadError as error:
            outcomes.append(error.code.name)
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
    ol.olMemFree(b)
    results[size] = outcomes
ol.olShutDown()
print(json.dumps(results))
"""


def test_freed_host_device_memory_is_refused(run_python) -> None:
    results = json.loads(run_python(CODE).stdout.strip().splitlines()[-1])
    for size, outcomes in results.items():
        assert outcomes == ["INVALID_ARGUMENT"] * 4, (size, outcomes)
