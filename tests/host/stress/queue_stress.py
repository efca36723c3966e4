"""Concurrency stress of the host backend's native queues, run by test_native_tsan.py under
ThreadSanitizer: threads enqueueing launches (small and pooled), host functions, events waited
for across queues, syncs, and busy queues destroyed (parked) and reused. Prints the counts it
checks; exits 1 when one is wrong. It counts only what it synchronised: each round records an
event after its last op before destroying its (maybe busy) queue, and the counter is read after
every such event was synchronised (a parked queue's work may still be running on a busy machine)."""

from __future__ import annotations

import ctypes
import struct
import sys
import threading
import time

import offload as ol
from offload_host import build_program

SOURCE = r"""
#include <offload_host.h>
#include <stdint.h>
struct bump_args { uint64_t *counter; };
OFFLOAD_KERNEL(bump) { __atomic_fetch_add(OFFLOAD_ARGS(struct bump_args)->counter, 1, __ATOMIC_RELAXED); }
OFFLOAD_KERNEL_PARAMS(bump_declared, struct bump_args, OFFLOAD_POINTER(counter));
OFFLOAD_KERNEL(bump_declared) { __atomic_fetch_add(OFFLOAD_ARGS(struct bump_args)->counter, 1, __ATOMIC_RELAXED); }
"""
THREADS, ROUNDS, OPS = 3, 4, 600
ONE = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
POOLED = ol.KernelLaunchSizeArgs(1, (64, 1, 1), (1, 1, 1))


def main() -> int:
    ol.olInit()
    devices: list[ol.Device] = []
    ol.olIterateDevices(lambda d, _: devices.append(d) or True)
    host = next(d for d in devices if ol.olGetDeviceInfo(d, ol.DeviceInfo.TYPE) is ol.DeviceType.HOST)
    program = ol.olCreateProgram(host, build_program(SOURCE, name="stress_bump"))
    # an undeclared kernel launches through the Python hook; a declared one, with the compiled
    # core (offload._compiled._fastpath), from the core's C through the host's native entry points
    kernels = [ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL) for name in ("bump", "bump_declared")]
    counter = ol.olMemAlloc(host, ol.AllocType.DEVICE, 8)
    ctypes.memset(counter, 0, 8)
    args = struct.pack("P", counter)
    lock = threading.Lock()
    calls = [0]
    events: list[ol.Event] = []
    ends: list[ol.Event] = []  # one per round: everything that round enqueued is done when it is
    failures: list[BaseException] = []

    def host_function(_: object) -> None:
        with lock:
            calls[0] += 1

    def work() -> None:
        try:
            for _ in range(ROUNDS):
                q = ol.olCreateQueue(host)
                for j in range(OPS):
                    ol.olLaunchKernel(q, host, kernels[j % 2], args, POOLED if j % 7 == 0 else ONE)
                    if j % 89 == 0:
                        ol.olLaunchKernel(None, host, kernels[j % 2], args, ONE)  # synchronous
                    if j % 50 == 0:
                        ol.olLaunchHostFunction(q, host_function, None)
                    if j % 97 == 0:
                        event = ol.olCreateEvent(q)
                        with lock:
                            events.append(event)
                    if j % 131 == 0:
                        with lock:
                            other = events[-1]
                        ol.olWaitEvents(q, [other])
                    if j % 211 == 0:
                        time.sleep(0.0003)  # the executor takes turns meanwhile
                    if j % 293 == 0:
                        ol.olSyncQueue(q)
                end = ol.olCreateEvent(q)
                with lock:
                    ends.append(end)
                ol.olDestroyQueue(q)  # busy: parked, then reused by another thread's create
        except BaseException as exc:  # noqa: BLE001 - counted below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for event in events + ends:
        ol.olSyncEvent(event)
        ol.olDestroyEvent(event)
    q = ol.olCreateQueue(host)
    ol.olSyncQueue(q)
    ol.olDestroyQueue(q)
    launches = ctypes.c_uint64.from_address(counter).value
    ol.olMemFree(counter)
    ol.olDestroyProgram(program)
    ol.olShutDown()
    expected = THREADS * ROUNDS * sum((64 if j % 7 == 0 else 1) + (j % 89 == 0) for j in range(OPS))
    print(f"compiled launches {getattr(ol.olLaunchKernel, 'counts', None)}")
    expected_calls = THREADS * ROUNDS * len(range(0, OPS, 50))
    print(f"work-items {launches} of {expected}, host functions {calls[0]} of {expected_calls}, failures {failures}")
    return 0 if (launches, calls[0], failures) == (expected, expected_calls, []) else 1


if __name__ == "__main__":
    sys.exit(main())
