"""A stream used without the synchronisation it needs must fail visibly: with the simulator's
delay knob (GPUSIM_DELAY_US) every stream operation lags, so reading results before
olSyncQueue, or a second queue not waiting for the first (olWaitEvents), sees stale data.

Each scenario runs twice: correctly synchronised (must be right) and with the synchronisation
left out (must be caught: stale data). A knob that did nothing would fail the second half.
"""

from __future__ import annotations

from typing import Any

import pytest

from cuda_child import offload_child

_SCENARIOS = offload_child(
    r"""
host = platform_devices()["host"][0]
foo = ol.olGetSymbol(ol.olCreateProgram(gpu, image("foo")), "foo", ol.SymbolKind.KERNEL)
synchronised = os.environ["SCENARIO_SYNC"] == "1"
out = {}

# 1. read the kernel's output on the host: needs olSyncQueue first
mem = ol.olMemAlloc(gpu, ol.AllocType.MANAGED, 256)
ctypes.memset(mem, 0, 256)
q = ol.olCreateQueue(gpu)
ol.olLaunchKernel(q, gpu, foo, struct.pack("P", mem), launch())
if synchronised:
    ol.olSyncQueue(q)
out["host_read"] = u32s(mem, 64) == list(range(64))
ol.olSyncQueue(q)

# 2. a second queue consumes the first queue's result: needs olWaitEvents
dev = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
back = (ctypes.c_uint32 * 64)()
q2 = ol.olCreateQueue(gpu)
scratch = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 256)
ol.olLaunchKernel(q, gpu, foo, struct.pack("P", scratch), launch())  # the producer is busy first
ol.olLaunchKernel(q, gpu, foo, struct.pack("P", dev), launch())
if synchronised:
    ol.olWaitEvents(q2, [ol.olCreateEvent(q)])
ol.olMemcpy(q2, ctypes.addressof(back), host, dev, gpu, 256)
ol.olSyncQueue(q2)
out["cross_queue"] = list(back) == list(range(64))
ol.olSyncQueue(q)

# 3. pending work is visible while the stream lags
ol.olLaunchHostFunction(q, lambda _: None, None)
out["pending_seen"] = ol.olGetQueueInfo(q, ol.QueueInfo.EMPTY) is False
ol.olSyncQueue(q)
out["empty_after_sync"] = ol.olGetQueueInfo(q, ol.QueueInfo.EMPTY) is True
ol.olShutDown()
emit(out)
"""
)


@pytest.mark.parametrize("synchronised", [True, False], ids=["synchronised", "missing-sync"])
def test_missing_synchronisation_is_visible(
    run_child: Any, child_env: Any, kernels: Any, simulated: Any, synchronised: bool
) -> None:
    env = child_env(kernels=kernels, delay_us=20000, SCENARIO_SYNC="1" if synchronised else "0")
    out = run_child(_SCENARIOS, env).result
    assert out["host_read"] is synchronised, "reading before olSyncQueue must see stale data under the delay"
    assert out["cross_queue"] is synchronised, "a queue not waiting for another must see stale data"
    assert out["pending_seen"] is True and out["empty_after_sync"] is True


def test_without_delay_the_unsynchronised_read_may_pass(
    run_child: Any, child_env: Any, kernels: Any, simulated: Any
) -> None:
    """Control: the same synchronised program is right with the delay off too."""
    out = run_child(_SCENARIOS, child_env(kernels=kernels, SCENARIO_SYNC="1")).result
    assert out["host_read"] and out["cross_queue"]
