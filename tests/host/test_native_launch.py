"""The host backend's native module used directly (no core API): launches of the test kernels on
pools of 0, 1 and 3 threads, and the group descriptor a kernel sees."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable

import pytest

from native_direct import Buffer, alloc, build, kernel, load, native, pool, private_cache, ptr_args  # fixtures by name


# --------------------------------------------------------------------------------------
# Launches


@pytest.mark.parametrize("groups", [1, 7, 1000])
def test_foo(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer], groups: int) -> None:
    out = alloc(ctypes.c_uint32, 64 * groups, fill=0xFF)
    native.launch(pool, kernel(load("foo"), "foo"), ptr_args(out.address), groups, 1, 1, 64, 1, 1, 0)
    assert list(out.array) == [i % 64 for i in range(64 * groups)]


def test_bar_is_a_different_foo(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    out = alloc(ctypes.c_uint32, 64)
    native.launch(pool, kernel(load("bar"), "foo"), ptr_args(out.address), 1, 1, 1, 64, 1, 1, 0)
    assert list(out.array) == [i + 1 for i in range(64)]


def test_localmem(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    groups = 1000
    out = alloc(ctypes.c_uint32, 64 * groups, fill=0xFF)
    native.launch(pool, kernel(load("localmem"), "localmem"), ptr_args(out.address), groups, 1, 1, 64, 1, 1, 256)
    assert list(out.array) == [(i % 64) * 2 for i in range(64 * groups)]


@pytest.mark.parametrize("name,dyn_mem", [("localmem_reduction", 256), ("localmem_static", 0)])
def test_reductions(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer], name: str, dyn_mem: int) -> None:
    groups = 1000
    out = alloc(ctypes.c_uint32, groups, fill=0xFF)
    native.launch(pool, kernel(load(name), name), ptr_args(out.address), groups, 1, 1, 64, 1, 1, dyn_mem)
    assert list(out.array) == [128] * groups
    # A smaller group sums fewer items.
    native.launch(pool, kernel(load(name), name), ptr_args(out.address), 3, 1, 1, 16, 1, 1, dyn_mem // 4)
    assert list(out.array[:3]) == [32] * 3


def test_global_write_then_read(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    handle = load("global")
    groups = 1000
    out = alloc(ctypes.c_uint32, 64 * groups)
    native.launch(pool, kernel(handle, "write"), None, 1, 1, 1, 64, 1, 1, 0)
    address, _, _ = native.dl_symbol(handle, "global")
    assert list((ctypes.c_uint32 * 64).from_address(address)) == [i * 2 for i in range(64)]
    native.launch(pool, kernel(handle, "read"), ptr_args(out.address), groups, 1, 1, 64, 1, 1, 0)
    assert list(out.array) == [(i % 64) * 2 for i in range(64 * groups)]


def test_saxpy(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    n, group = 100_003, 256
    groups = (n + group - 1) // group
    x = alloc(ctypes.c_float, n)
    y = alloc(ctypes.c_float, n + 1)
    x.array[:] = [float(i) for i in range(n)]
    y.array[:] = [float(2 * i) for i in range(n)] + [-1.0]
    args = struct.pack("<f4xQQQ", 3.0, x.address, y.address, n)
    native.launch(pool, kernel(load("saxpy"), "saxpy"), args, groups, 1, 1, group, 1, 1, 0)
    assert list(y.array[:n]) == [float(5 * i) for i in range(n)]
    assert y.array[n] == -1.0  # nothing past n is touched


def test_sequence_and_single_counter(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    seq = kernel(load("sequence"), "sequence")
    inout = alloc(ctypes.c_uint32, 12, fill=0xFF)
    for idx in range(12):
        native.launch(pool, seq, struct.pack("<I4xQ", idx, inout.address), 4, 1, 1, 32, 1, 1, 0)
    assert list(inout.array) == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89]

    counter = kernel(load("single_counter"), "single_counter")
    init, out = alloc(ctypes.c_uint32, 1), alloc(ctypes.c_uint32, 1)
    init.array[0] = 5
    native.launch(pool, counter, struct.pack("<iiQQ", 1000, 3, init.address, out.address), 8, 1, 1, 64, 1, 1, 0)
    assert out.array[0] == 3005


def test_argument_only_kernels_run(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    b = alloc(ctypes.c_int, 1)
    native.launch(pool, kernel(load("noargs"), "noargs"), None, 4, 1, 1, 8, 1, 1, 0)
    native.launch(pool, kernel(load("byte"), "byte"), b"\x2a", 4, 1, 1, 8, 1, 1, 0)
    native.launch(pool, kernel(load("multiargs"), "multiargs"), struct.pack("<b7xQh6x", 1, b.address, 3), 4, 1, 1, 8, 1, 1, 0)


PROBE = r"""
#include <offload_host.h>
/* Per group, 12 words at out[12 * linear group id]: group_id, num_groups, group_size,
 * local_mem_size, (local_mem 64-byte aligned), (local_mem private to the group), args==NULL. */
static uint32_t *null_out; /* where probe writes when launched without arguments */
OFFLOAD_KERNEL(probe) {
  const offload_group_t *g = OFFLOAD_GROUP;
  uint32_t *const *argp = (uint32_t *const *)offload_args_;
  uint32_t *base = argp ? argp[0] : null_out;
  uint64_t linear = ((uint64_t)g->group_id.z * g->num_groups.y + g->group_id.y) * g->num_groups.x + g->group_id.x;
  uint32_t *o = base + 12 * linear;
  uint32_t words = (uint32_t)(g->local_mem_size / 4), priv = 1;
  uint32_t *lm = OFFLOAD_LOCAL_MEM(uint32_t);
  for (uint32_t i = 0; i < words; ++i) lm[i] = (uint32_t)linear;
  for (volatile int spin = 0; spin < 2000; ++spin) {}
  for (uint32_t i = 0; i < words; ++i) priv &= lm[i] == (uint32_t)linear;
  o[0] = g->group_id.x; o[1] = g->group_id.y; o[2] = g->group_id.z;
  o[3] = g->num_groups.x; o[4] = g->num_groups.y; o[5] = g->num_groups.z;
  o[6] = g->group_size.x; o[7] = g->group_size.y; o[8] = g->group_size.z;
  o[9] = (uint32_t)g->local_mem_size;
  o[10] = (g->local_mem == NULL) ? 2u : ((uintptr_t)g->local_mem % 64 == 0);
  o[11] = priv + 10u * (offload_args_ == NULL);
}
OFFLOAD_EXPORT void set_null_out(uint32_t *p) { null_out = p; }
"""


@pytest.mark.parametrize("dyn_mem", [0, 4, 100, 4096])
@pytest.mark.parametrize("grid", [(1, 1, 1), (5, 3, 2), (1, 40, 7)])
def test_group_descriptors(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer], grid: tuple[int, int, int], dyn_mem: int) -> None:
    probe = kernel(load(build.build_program(PROBE, name="probe")), "probe")
    nx, ny, nz = grid
    total = nx * ny * nz
    out = alloc(ctypes.c_uint32, 12 * total, fill=0xFF)
    native.launch(pool, probe, ptr_args(out.address), nx, ny, nz, 3, 2, 1, dyn_mem)
    expected = []
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                local_ok = 2 if dyn_mem == 0 else 1
                expected += [x, y, z, nx, ny, nz, 3, 2, 1, dyn_mem, local_ok, 1]
    assert list(out.array) == expected


def test_args_none_and_empty_pass_null(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    handle = load(build.build_program(PROBE, name="probe"))
    out = alloc(ctypes.c_uint32, 12 * 4, fill=0xFF)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(native.dl_symbol(handle, "set_null_out")[0])(out.address)
    for args in (None, b""):
        native.launch(pool, kernel(handle, "probe"), args, 4, 1, 1, 1, 1, 1, 0)
        assert [out.array[12 * g + 11] for g in range(4)] == [11] * 4
