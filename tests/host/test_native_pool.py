"""The host backend's native module used directly (no core API): launch errors and size objects,
concurrent launches sharing a pool, workers on the affinity mask, pool bounds and teardown."""

from __future__ import annotations

import ctypes
import os
import pathlib
import struct
import sys
import threading
import time
import types
from collections.abc import Callable

import pytest

from native_direct import Buffer, alloc, kernel, load, native, pool, private_cache, ptr_args  # fixtures by name


def test_concurrent_launches_share_a_pool(load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    pool = native.pool_create(2)
    try:
        foo = kernel(load("foo"), "foo")
        localmem = kernel(load("localmem"), "localmem")
        nthreads, rounds, groups = 6, 25, 97
        outs = [alloc(ctypes.c_uint32, 64 * groups) for _ in range(nthreads)]
        errors: list[BaseException] = []
        barrier = threading.Barrier(nthreads)

        def worker(t: int) -> None:
            try:
                barrier.wait()
                fn, dyn, factor = (foo, 0, 1) if t % 2 else (localmem, 256, 2)
                for r in range(rounds):
                    ctypes.memset(outs[t].address, 0xFF, outs[t].size)
                    native.launch(pool, fn, ptr_args(outs[t].address), groups, 1, 1, 64, 1, 1, dyn)
                    assert list(outs[t].array) == [(i % 64) * factor for i in range(64 * groups)], (t, r)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(nthreads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
    finally:
        native.pool_destroy(pool)


def test_launch_errors(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    foo = kernel(load("foo"), "foo")
    out = alloc(ctypes.c_uint32, 64)
    args = ptr_args(out.address)
    for dims in [(0, 1, 1, 1, 1, 1), (1, 0, 1, 1, 1, 1), (1, 1, 1, 1, 1, 0)]:
        with pytest.raises(ValueError):
            native.launch(pool, foo, args, *dims, 0)
    with pytest.raises(OverflowError):
        native.launch(pool, foo, args, 1 << 32, 1, 1, 1, 1, 1, 0)
    with pytest.raises(TypeError):
        native.launch(pool, foo, args, 1, 1, 1, 64, 1, 1)
    with pytest.raises(ValueError):
        native.launch(pool, 0, args, 1, 1, 1, 64, 1, 1, 0)
    for groups in (1, 50):  # inline and pooled paths
        with pytest.raises(MemoryError):
            native.launch(pool, foo, args, groups, 1, 1, 64, 1, 1, 1 << 62)
    # The pool still works afterwards.
    native.launch(pool, foo, args, 1, 1, 1, 64, 1, 1, 0)
    assert list(out.array) == list(range(64))


def test_launch_takes_a_size_object(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    """launch(pool, kernel, args, size) reads num_groups, group_size and dyn_shared_memory."""
    foo = kernel(load("foo"), "foo")
    out = alloc(ctypes.c_uint32, 128)
    args = ptr_args(out.address)
    size = types.SimpleNamespace(num_groups=(2, 1, 1), group_size=(64, 1, 1), dyn_shared_memory=0)
    native.launch(pool, foo, args, size)
    assert list(out.array) == list(range(64)) * 2
    bad = [
        (types.SimpleNamespace(num_groups=(2, 1), group_size=(64, 1, 1), dyn_shared_memory=0), ValueError),
        (types.SimpleNamespace(num_groups=(0, 1, 1), group_size=(64, 1, 1), dyn_shared_memory=0), ValueError),
        (types.SimpleNamespace(num_groups=5, group_size=(64, 1, 1), dyn_shared_memory=0), TypeError),
        (types.SimpleNamespace(num_groups=(2, 1, 1), group_size=(64, 1, 1)), AttributeError),
        (types.SimpleNamespace(num_groups=(1 << 31, 1, 1), group_size=(4, 1, 1), dyn_shared_memory=0), OverflowError),
    ]
    for size, error in bad:
        with pytest.raises(error):
            native.launch(pool, foo, args, size)
    with pytest.raises(TypeError):
        native.launch(pool, foo, args, size, 0)


def test_workers_spread_over_cpus_and_keep_their_mask(load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    """Big launches after idle spells (when a woken worker may land on a CPU its job already
    uses, and moves itself for the job): every result is exact and every worker is back on the
    process's affinity mask afterwards. More workers than CPUs: some find no free CPU."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads thread names and masks through /proc")
    n, group = 1 << 20, 256
    x, y = alloc(ctypes.c_float, n), alloc(ctypes.c_float, n)
    ctypes.memmove(x.address, struct.pack(f"{n}f", *([1.0] * n)), 4 * n)
    saxpy = kernel(load("saxpy"), "saxpy")
    args = struct.pack("<f4xQQQ", 1.0, x.address, y.address, n)
    pool = native.pool_create(len(os.sched_getaffinity(0)) + 1)
    try:
        for i in range(1, 21):
            time.sleep(0.01)
            native.launch(pool, saxpy, args, n // group, 1, 1, group, 1, 1, 0)
            assert y.array[0] == y.array[n - 1] == float(i)
        workers = [t for t in os.listdir("/proc/self/task") if _comm(t) == "offload-pool"]
        assert workers
        for tid in workers:
            assert os.sched_getaffinity(int(tid)) == os.sched_getaffinity(0), f"worker {tid} kept a moved mask"
    finally:
        native.pool_destroy(pool)


def _comm(tid: str) -> str:
    try:
        return pathlib.Path(f"/proc/self/task/{tid}/comm").read_text().strip()
    except OSError:
        return ""


def test_pool_create_bounds() -> None:
    with pytest.raises(OverflowError):
        native.pool_create(-1)
    with pytest.raises(ValueError):
        native.pool_create(1 << 20)
    for n in (0, 1, 8):
        native.pool_destroy(native.pool_create(n))


def test_pool_destroy_joins_threads() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("counts threads through /proc")

    def count() -> int:
        return len(os.listdir("/proc/self/task"))

    before = count()
    pool = native.pool_create(5)
    assert count() == before + 5
    native.pool_destroy(pool)
    assert count() == before
