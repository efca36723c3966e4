"""Cooperative launches on the host device: every group of the grid on a thread of its own, all
at once, so that ``OFFLOAD_GRID_BARRIER()`` (``offload_host.h``) really waits for every group.

Each group's kernel is called under the device's fault guard (``_native.call_guarded``, the GIL
released while it runs): a fault is the launch's error (BACKEND_FAILURE) and breaks the barrier
for the other groups. The barrier is a ``threading.Barrier`` of the grid's groups behind a C
callback in the group's ``grid_barrier``.
At most ``MAX_COOPERATIVE_GROUPS`` groups: each is an OS thread.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from offload import ErrorCode, KernelLaunchSizeArgs, OffloadError

from ._native import DeviceFaulted, call_guarded

__all__ = ["MAX_COOPERATIVE_GROUPS", "run_cooperative"]

MAX_COOPERATIVE_GROUPS = 256
_LOCAL_ALIGN = 64


class _Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


_BARRIER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Group(ctypes.Structure):
    """``offload_group_t``."""

    _fields_ = [
        ("group_id", _Dim3),
        ("num_groups", _Dim3),
        ("group_size", _Dim3),
        ("local_mem", ctypes.c_void_p),
        ("local_mem_size", ctypes.c_size_t),
        ("grid_barrier", _BARRIER),
        ("grid_state", ctypes.c_void_p),
    ]


def run_cooperative(pool: int, kernel: int, args: Any, launch: KernelLaunchSizeArgs) -> None:
    """Run the grid, one thread per group, and return once every group has; a group's failure
    (its kernel's fault, or a broken barrier) is raised after all have stopped."""
    nx, ny, nz = launch.num_groups
    total = nx * ny * nz
    if total > MAX_COOPERATIVE_GROUPS:
        raise OffloadError(
            ErrorCode.INVALID_SIZE, f"a cooperative launch on the host runs at most {MAX_COOPERATIVE_GROUPS} groups, not {total}"
        )
    data = None if args is None else ctypes.create_string_buffer(bytes(args), max(1, len(bytes(args))))
    data_address = None if data is None else ctypes.addressof(data)
    barrier = threading.Barrier(total)
    failures: list[BaseException] = []

    def wait(_group: int | None) -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError as exc:
            failures.append(exc)

    callback = _BARRIER(wait)
    dynamic = launch.dyn_shared_memory

    def group(x: int, y: int, z: int) -> None:
        local = ctypes.create_string_buffer(dynamic + _LOCAL_ALIGN) if dynamic else None
        local_address = None
        if local is not None:
            base = ctypes.addressof(local)
            local_address = base + (-base % _LOCAL_ALIGN)
        record = _Group(
            _Dim3(x, y, z), _Dim3(nx, ny, nz), _Dim3(*launch.group_size), local_address, dynamic, callback, None
        )
        try:
            call_guarded(pool, kernel, data_address or 0, ctypes.addressof(record))
        except DeviceFaulted as exc:  # the device is faulted: the other groups stop at the barrier
            failures.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=group, args=(x, y, z), name=f"offload-host cooperative group {x},{y},{z}", daemon=True)
        for z in range(nz)
        for y in range(ny)
        for x in range(nx)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    faults = [failure for failure in failures if isinstance(failure, DeviceFaulted)]
    if faults:
        raise faults[0]
    if failures:
        raise OffloadError(ErrorCode.UNKNOWN, f"a cooperative launch's grid barrier broke: {failures[0]!r}")
