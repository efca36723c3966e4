"""The host backend's native module and build helper, used directly (no core API)."""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import pathlib
import struct
import sys
import threading
import time
import types
import uuid
from collections.abc import Callable, Iterator

import pytest

_PKG_DIR = pathlib.Path(__file__).resolve().parents[2] / "backends" / "host" / "src" / "offload_host"


def _load_from_file(name: str, path: pathlib.Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load() -> tuple[types.ModuleType, types.ModuleType]:
    """``offload_host._native`` and ``offload_host.build``; straight from their files when the
    package itself cannot be imported (its ``__init__`` needs the core)."""
    try:
        return importlib.import_module("offload_host._native"), importlib.import_module("offload_host.build")
    except ImportError:
        sos = sorted(_PKG_DIR.glob("_native*.so"))
        if not sos:
            pytest.skip("offload_host._native is not built", allow_module_level=True)
        return _load_from_file("_offload_host_native", sos[0]), _load_from_file("_offload_host_build", _PKG_DIR / "build.py")


native, build = _load()

KIND_FUNC, KIND_OBJECT = 0, 1


# --------------------------------------------------------------------------------------
# Fixtures and helpers


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("OFFLOAD_HOST_CACHE")
    os.environ["OFFLOAD_HOST_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        del os.environ["OFFLOAD_HOST_CACHE"]
    else:
        os.environ["OFFLOAD_HOST_CACHE"] = old


@pytest.fixture
def load(tmp_path: pathlib.Path) -> Iterator[Callable[..., int]]:
    """load(name | bytes) -> dl handle of that program, closed at teardown."""
    handles: list[int] = []

    def _load(program: str | bytes) -> int:
        data = build.build_test_kernel(program) if isinstance(program, str) else program
        path = tmp_path / f"lib{uuid.uuid4().hex}.so"
        path.write_bytes(data)
        handle = native.dl_open(str(path))
        handles.append(handle)
        return handle

    yield _load
    for handle in handles:
        native.dl_close(handle)


@pytest.fixture(params=[0, 1, 3], ids=lambda n: f"threads{n}")
def pool(request: pytest.FixtureRequest) -> Iterator[int]:
    handle = native.pool_create(request.param)
    yield handle
    native.pool_destroy(handle)


class Buffer:
    """Native memory from mem_alloc viewed as a ctypes array."""

    def __init__(self, ctype: type, count: int, fill: int = 0) -> None:
        self.size = ctypes.sizeof(ctype) * count
        self.address = native.mem_alloc(self.size)
        self.array = (ctype * count).from_address(self.address)
        ctypes.memset(self.address, fill, self.size)

    def free(self) -> None:
        native.mem_free(self.address)


@pytest.fixture
def alloc() -> Iterator[Callable[..., Buffer]]:
    buffers: list[Buffer] = []

    def _alloc(ctype: type, count: int, fill: int = 0) -> Buffer:
        buffers.append(Buffer(ctype, count, fill))
        return buffers[-1]

    yield _alloc
    for b in buffers:
        b.free()


def kernel(handle: int, name: str) -> int:
    sym = native.dl_symbol(handle, name)
    assert sym is not None, name
    assert sym[2] == KIND_FUNC
    return sym[0]


def ptr_args(*addresses: int) -> bytes:
    return struct.pack(f"<{len(addresses)}Q", *addresses)


# --------------------------------------------------------------------------------------
# Build helper and symbols


def test_include_dir_holds_header() -> None:
    assert (build.include_dir() / "offload_host.h").is_file()


@pytest.mark.parametrize("name", build.TEST_KERNELS)
def test_every_test_kernel_builds_and_exports(name: str, load: Callable[..., int]) -> None:
    data = build.build_test_kernel(name)
    assert data[:4] == b"\x7fELF"
    handle = load(data)
    exported = {"bar": ["foo"], "global": ["write", "read"]}.get(name, [name])
    for sym_name in exported:
        address, size, kind = native.dl_symbol(handle, sym_name)
        assert address != 0 and kind == KIND_FUNC and size > 0


def test_dl_symbol_global_object_and_missing(load: Callable[..., int]) -> None:
    handle = load("global")
    address, size, kind = native.dl_symbol(handle, "global")
    assert (kind, size) == (KIND_OBJECT, 256)
    assert address % 4 == 0
    assert native.dl_symbol(handle, "no_such_symbol") is None


def test_build_program_cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_HOST_CACHE", str(tmp_path))
    source = f"/* {uuid.uuid4()} */\nint answer(void) {{ return 42; }}\n"
    first = build.build_program(source, name="answer")
    cached = list(tmp_path.glob("*.so"))
    assert len(cached) == 1 and cached[0].read_bytes() == first
    assert build.build_program(source, name="answer") == first
    assert not list(tmp_path.glob("*.tmp"))  # written atomically, no leftovers
    # Uncached builds produce a working program too; the answer is read back through dlsym.
    path = tmp_path / "libanswer.so"
    path.write_bytes(build.build_program(source, name="answer", cache=False))
    lib = ctypes.CDLL(str(path))
    assert lib.answer() == 42


def test_build_program_cflags_change_result() -> None:
    source = "#ifndef VALUE\n#error VALUE must be set\n#endif\nint value(void) { return VALUE; }\n"
    a = build.build_program(source, cflags=["-DVALUE=1"])
    b = build.build_program(source, cflags=["-DVALUE=2"])
    assert a != b


def _core() -> types.ModuleType:
    """The core package (the build helper raises its OffloadError); its absence is a failure:
    offload-host requires offload-core."""
    import offload

    assert hasattr(offload, "OffloadError"), f"the installed offload core {offload.__file__} has no OffloadError"
    return offload


def test_build_program_syntax_error() -> None:
    offload = _core()
    with pytest.raises(offload.OffloadError) as info:
        build.build_program("int broken( {", name="broken", cache=False)
    assert info.value.code == offload.ErrorCode.COMPILE_FAILURE
    assert "error" in info.value.details


def test_build_program_missing_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    offload = _core()
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(offload.OffloadError) as info:
        build.build_program("int x;", cache=False)
    assert info.value.code == offload.ErrorCode.HOST_TOOL_NOT_FOUND
    assert "/nonexistent/cc" in info.value.details


def test_unknown_test_kernel() -> None:
    offload = _core()
    with pytest.raises(offload.OffloadError) as info:
        build.test_kernel_source("no_such_kernel")
    assert info.value.code == offload.ErrorCode.NOT_FOUND


# --------------------------------------------------------------------------------------
# Dynamic loading


def test_dl_open_garbage_raises(tmp_path: pathlib.Path) -> None:
    garbage = tmp_path / "libgarbage.so"
    garbage.write_bytes(b"this is not an ELF file" * 10)
    with pytest.raises(OSError, match="libgarbage.so"):
        native.dl_open(str(garbage))
    with pytest.raises(OSError, match="No such file"):
        native.dl_open(str(tmp_path / "missing.so"))


def test_global_ctor_runs_in_priority_order(pool: int, load: Callable[..., int], alloc: Callable[..., Buffer]) -> None:
    handle = load("global_ctor")
    out = alloc(ctypes.c_uint32, 64)
    native.launch(pool, kernel(handle, "global_ctor"), ptr_args(out.address), 1, 1, 1, 64, 1, 1, 0)
    assert list(out.array) == [i + 100 for i in range(64)]


def test_global_dtor_runs_at_close(tmp_path: pathlib.Path, alloc: Callable[..., Buffer]) -> None:
    path = tmp_path / "libglobal_dtor.so"
    path.write_bytes(build.build_test_kernel("global_dtor"))
    handle = native.dl_open(str(path))
    pool = native.pool_create(0)
    try:
        native.launch(pool, kernel(handle, "global_dtor"), None, 1, 1, 1, 64, 1, 1, 0)
    finally:
        native.pool_destroy(pool)
    out = alloc(ctypes.c_uint32, 64)
    address, size, kind = native.dl_symbol(handle, "dtor_out")
    assert (size, kind) == (8, KIND_OBJECT)
    ctypes.c_void_p.from_address(address).value = out.address
    assert list(out.array) == [0] * 64
    native.dl_close(handle)
    assert list(out.array) == [1] * 64


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


# --------------------------------------------------------------------------------------
# Memory


def test_mem_alloc_aligned_and_zero_size() -> None:
    addresses = [native.mem_alloc(size) for size in (0, 1, 3, 64, 1000, 1 << 20)]
    try:
        assert all(a != 0 and a % 64 == 0 for a in addresses)
        assert len(set(addresses)) == len(addresses)
    finally:
        for a in addresses:
            native.mem_free(a)
    with pytest.raises(MemoryError):
        native.mem_alloc(1 << 62)
    with pytest.raises(OverflowError):
        native.mem_alloc(-1)
    native.mem_free(0)


@pytest.mark.parametrize("plen", [1, 2, 3, 4, 16, 17])
@pytest.mark.parametrize("size", [0, 1, 2, 5, 16, 17, 100, 1001, 65537])
def test_fill(alloc: Callable[..., Buffer], plen: int, size: int) -> None:
    guard = 64
    buf = alloc(ctypes.c_ubyte, size + guard, fill=0xEE)
    pattern = bytes((i * 37 + 11) % 256 for i in range(plen))
    native.fill(buf.address, pattern, size)
    expected = (pattern * (size // plen + 1))[:size] + b"\xee" * guard
    assert bytes(buf.array) == expected


def test_fill_accepts_buffers_and_rejects_empty(alloc: Callable[..., Buffer]) -> None:
    buf = alloc(ctypes.c_ubyte, 10)
    native.fill(buf.address, bytearray(b"ab"), 5)
    native.fill(buf.address + 5, memoryview(b"xyz"), 5)
    assert bytes(buf.array) == b"ababaxyzxy"
    with pytest.raises(ValueError):
        native.fill(buf.address, b"", 4)
    with pytest.raises(TypeError):
        native.fill(buf.address, "ab", 4)


def test_copy(alloc: Callable[..., Buffer]) -> None:
    src = alloc(ctypes.c_ubyte, 1000)
    dst = alloc(ctypes.c_ubyte, 1000)
    src.array[:] = [i % 251 for i in range(1000)]
    native.copy(dst.address, src.address, 999)
    assert list(dst.array[:999]) == [i % 251 for i in range(999)] and dst.array[999] == 0
    # Overlapping ranges behave like memmove.
    native.copy(src.address + 1, src.address, 500)
    assert list(src.array[:501]) == [0] + [i % 251 for i in range(500)]
    native.copy(dst.address, src.address, 0)
