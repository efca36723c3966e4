"""Host program images: what is loaded, which symbols count, where the copy lives, declared
kernel parameters and launch limits."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

import offload as ol
import offload_host
from offload_host import HostBackend
from helpers import child_environ

_LIBC_PROGRAM = r"""
#include <offload_host.h>
#include <stdlib.h>
#include <string.h>

OFFLOAD_EXPORT uint32_t counter[4];
OFFLOAD_EXPORT __thread int per_thread;
static void helper(void) {}
OFFLOAD_EXPORT void *keep_free = (void *)free;

struct foo_args { uint32_t *out; };
OFFLOAD_KERNEL_PARAMS(foo, struct foo_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(foo) {
  const struct foo_args *a = OFFLOAD_ARGS(struct foo_args);
  helper();
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = (uint32_t)strlen("abc") + tid.x; }
}
"""


def _run_child(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = child_environ("OFFLOAD_")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=120)


def _code(exc: pytest.ExceptionInfo[ol.OffloadError]) -> ol.ErrorCode:
    return exc.value.code


# --- symbols come from the image itself -------------------------------------------------------


def test_symbols_of_dependencies_are_not_found(host: ol.DeviceHandle) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(_LIBC_PROGRAM, name="libc_user"))
    try:
        for name, kind in [
            ("system", ol.SymbolKind.KERNEL),
            ("free", ol.SymbolKind.KERNEL),
            ("malloc", ol.SymbolKind.KERNEL),
            ("strlen", ol.SymbolKind.KERNEL),
            ("environ", ol.SymbolKind.GLOBAL_VARIABLE),
            ("stdout", ol.SymbolKind.GLOBAL_VARIABLE),
            ("errno", ol.SymbolKind.GLOBAL_VARIABLE),
        ]:
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetSymbol(program, name, kind)
            assert _code(info) is ol.ErrorCode.NOT_FOUND, name
        # the image's own symbols, of the right kind only
        ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
        counter = ol.olGetSymbol(program, "counter", ol.SymbolKind.GLOBAL_VARIABLE)
        assert ol.olGetSymbolInfo(counter, ol.SymbolInfo.GLOBAL_VARIABLE_SIZE) == 16
        for name, kind in [
            ("foo", ol.SymbolKind.GLOBAL_VARIABLE),  # a function is not a global
            ("counter", ol.SymbolKind.KERNEL),  # data is not a kernel
            ("keep_free", ol.SymbolKind.KERNEL),
            ("per_thread", ol.SymbolKind.GLOBAL_VARIABLE),  # thread-local: not one device global
            ("helper", ol.SymbolKind.KERNEL),  # static: not exported
        ]:
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetSymbol(program, name, kind)
            assert _code(info) is ol.ErrorCode.NOT_FOUND, name
    finally:
        ol.olDestroyProgram(program)


def test_own_kernel_of_a_libc_program_runs(host: ol.DeviceHandle) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(_LIBC_PROGRAM, name="libc_user"))
    kernel = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
    out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 8 * 4)
    ol.olLaunchKernel(None, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (8, 1, 1)))
    assert list((ctypes.c_uint32 * 8).from_address(out)) == [3 + i for i in range(8)]
    ol.olMemFree(out)
    ol.olDestroyProgram(program)


# --- what loads -------------------------------------------------------------------------------


def test_pie_executables_are_refused_as_dlopen_does(host: ol.DeviceHandle, tmp_path) -> None:
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        pytest.skip("no C compiler")
    source = tmp_path / "pie.c"
    source.write_text("int foo(void) { return 1; }\nint main(void) { return foo(); }\n")
    pie = tmp_path / "pie"
    subprocess.run([compiler, "-fPIE", "-pie", "-o", str(pie), str(source)], check=True)
    data = pie.read_bytes()
    # What this glibc does with a PIE (ET_DYN with DF_1_PIE): dlopen refuses it.
    with pytest.raises(OSError, match="position-independent executable"):
        ctypes.CDLL(str(pie))
    assert ol.olIsValidBinary(host, data) is False
    with pytest.raises(ol.OffloadError) as info:
        ol.olCreateProgram(host, data)
    assert _code(info) is ol.ErrorCode.INVALID_BINARY
    assert "position-independent executable" in str(info.value)


def test_phdr_type_flip_is_refused_not_a_crash() -> None:
    """The issue's reproduction: so[e_phoff] ^= 1 turns the first PT_LOAD into PT_NULL."""
    result = _run_child(
        """
        import struct, offload as ol, offload_host
        ol.olInit()
        found = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        so = bytearray(offload_host.build_test_kernel("foo"))
        so[struct.unpack_from("<Q", so, 32)[0]] ^= 1
        assert ol.olIsValidBinary(found[-1], bytes(so)) is False
        try:
            ol.olCreateProgram(found[-1], bytes(so))
        except ol.OffloadError as exc:
            print(exc.code.name)
        ol.olShutDown()
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "INVALID_BINARY"


def test_undefined_symbol_is_invalid_without_loading(host: ol.DeviceHandle) -> None:
    source = "#include <offload_host.h>\nextern int no_such_function(void);\nOFFLOAD_KERNEL(k) { (void)offload_args_; (void)offload_group_; no_such_function(); }\n"
    data = offload_host.build_program(source, name="undefined")
    assert ol.olIsValidBinary(host, data) is False
    with pytest.raises(ol.OffloadError) as info:
        ol.olCreateProgram(host, data)
    assert _code(info) is ol.ErrorCode.INVALID_BINARY
    assert "no_such_function" in str(info.value)


def test_symbols_of_the_process_global_scope_resolve_as_in_dlopen(host: ol.DeviceHandle) -> None:
    """erff is in libm, which python itself links: dlopen resolves it without -lm, and the
    trial load (whose own scope lacks libm) must not refuse the program for it."""
    source = r"""
#include <offload_host.h>
#include <math.h>
struct a { float *x; };
OFFLOAD_KERNEL_PARAMS(k, struct a, OFFLOAD_POINTER(x));
OFFLOAD_KERNEL(k) { const struct a *p = OFFLOAD_ARGS(struct a); OFFLOAD_FOR_EACH_ITEM(t) { p->x[t.x] = erff(p->x[t.x]); } }
"""
    if "libm.so" not in open("/proc/self/maps").read():
        pytest.skip("this python does not link libm")
    data = offload_host.build_program(source, name="uses_libm")
    assert ol.olIsValidBinary(host, data) is True
    program = ol.olCreateProgram(host, data)
    kernel = ol.olGetSymbol(program, "k", ol.SymbolKind.KERNEL)
    x = ol.olMemAlloc(host, ol.AllocType.MANAGED, 4)
    ctypes.c_float.from_address(x).value = 0.0
    ol.olLaunchKernel(None, host, kernel, struct.pack("P", x), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)))
    assert ctypes.c_float.from_address(x).value == 0.0
    ol.olMemFree(x)
    ol.olDestroyProgram(program)


def test_is_valid_binary_runs_no_constructor(host: ol.DeviceHandle) -> None:
    source = r"""
#include <offload_host.h>
#include <stdlib.h>
__attribute__((constructor)) static void boom(void) { abort(); }
OFFLOAD_KERNEL_NO_PARAMS(k);
OFFLOAD_KERNEL(k) { (void)offload_args_; (void)offload_group_; }
"""
    assert ol.olIsValidBinary(host, offload_host.build_program(source, name="aborting_ctor")) is True


# --- the private copy ----------------------------------------------------------------------------


def _open_copies() -> list[str]:
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return [link for link in links if "offload-host" in link]


def test_copy_is_anonymous_and_closed_at_unload(host: ol.DeviceHandle, tmp_path, monkeypatch) -> None:
    before = _open_copies()
    program = ol.olCreateProgram(host, offload_host.build_test_kernel("foo"))
    during = _open_copies()
    assert len(during) == len(before) + 1
    assert all(link.startswith("/memfd:") for link in during), during
    ol.olDestroyProgram(program)
    assert _open_copies() == before


_KILLED_MID_LOAD = """
import os, signal, offload as ol, offload_host
{setup}
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
source = r'''
#include <offload_host.h>
#include <signal.h>
#include <unistd.h>
__attribute__((constructor)) static void die(void) {{ kill(getpid(), SIGKILL); }}
OFFLOAD_KERNEL_NO_PARAMS(k);
OFFLOAD_KERNEL(k) {{ (void)offload_args_; (void)offload_group_; }}
'''
data = offload_host.build_program(source, name="killer")
print("loading", flush=True)
ol.olCreateProgram(found[-1], data)
print("survived", flush=True)
"""

_NO_MEMFD = """
import os
def _no_memfd(*args, **kwargs):
    raise OSError(38, "memfd_create is not available")
os.memfd_create = _no_memfd
"""


@pytest.mark.parametrize("setup", ["", _NO_MEMFD], ids=["memfd", "temp-dir"])
def test_no_copy_left_when_killed_during_load(tmp_path, setup: str) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    result = _run_child(_KILLED_MID_LOAD.format(setup=setup), env={"TMPDIR": str(tmp), "OFFLOAD_HOST_CACHE": str(tmp_path / "cache")})
    assert result.returncode == -9, result.stderr
    assert result.stdout.split() == ["loading"]
    assert os.listdir(tmp) == []


def test_temp_dir_fallback_loads_and_leaves_nothing(tmp_path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    result = _run_child(
        _NO_MEMFD
        + """
import glob, struct, ctypes, offload as ol, offload_host
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = found[-1]
data = offload_host.build_test_kernel("foo")
assert ol.olIsValidBinary(host, data)
program = ol.olCreateProgram(host, data)
assert os.listdir(os.environ["TMPDIR"]) == [], "the copy has a name"
kernel = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 4 * 4)
ol.olLaunchKernel(None, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (4, 1, 1)))
assert list((ctypes.c_uint32 * 4).from_address(out)) == [0, 1, 2, 3]
ol.olDestroyProgram(program)
ol.olShutDown()
print("ok")
""",
        env={"TMPDIR": str(tmp), "OFFLOAD_HOST_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert os.listdir(tmp) == []


@pytest.mark.parametrize("where", ["missing", "a-file"])
def test_unusable_temp_dir_is_host_io(tmp_path, where: str) -> None:
    """Without memfd the copy goes to the temp dir; when that is unusable: HOST_IO (and
    olIsValidBinary is False, as the program could not be created)."""
    target = tmp_path / "nowhere"
    if where == "a-file":
        target.write_text("not a directory")
    result = _run_child(
        _NO_MEMFD
        + f"""
import tempfile, offload as ol, offload_host
data = offload_host.build_test_kernel("foo")
tempfile.tempdir = {str(target)!r}
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
print(ol.olIsValidBinary(found[-1], data))
try:
    ol.olCreateProgram(found[-1], data)
except ol.OffloadError as exc:
    print(exc.code.name, "|", exc)
""",
        env={"OFFLOAD_HOST_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    valid, error = result.stdout.strip().splitlines()
    assert valid == "False"
    assert error.startswith("HOST_IO |") and str(target) in error


def test_memfd_needs_no_temp_dir(tmp_path) -> None:
    result = _run_child(
        f"""
import tempfile, offload as ol, offload_host
data = offload_host.build_test_kernel("foo")
tempfile.tempdir = {str(tmp_path / "missing")!r}
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
ol.olDestroyProgram(ol.olCreateProgram(found[-1], data))
print("ok")
""",
        env={"OFFLOAD_HOST_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# --- declared kernel parameters -----------------------------------------------------------------

P, I, U, F = "pointer", "int", "uint", "float"
_DECLARED = {
    ("foo", "foo"): [(0, 8, P, "out")],
    ("bar", "foo"): [(0, 8, P, "out")],
    ("byte", "byte"): [(0, 1, U, "c")],
    ("global", "write"): [],
    ("global", "read"): [(0, 8, P, "out")],
    ("global_ctor", "global_ctor"): [(0, 8, P, "out")],
    ("global_dtor", "global_dtor"): [],
    ("localmem", "localmem"): [(0, 8, P, "out")],
    ("localmem_reduction", "localmem_reduction"): [(0, 8, P, "out")],
    ("localmem_static", "localmem_static"): [(0, 8, P, "out")],
    ("multiargs", "multiargs"): [(0, 1, I, "A"), (8, 8, P, "B"), (16, 2, I, "C")],
    ("noargs", "noargs"): [],
    ("saxpy", "saxpy"): [(0, 4, F, "a"), (8, 8, P, "x", "float32", True), (16, 8, P, "y", "float32"), (24, 8, U, "n")],
    ("sequence", "sequence"): [(0, 4, U, "idx"), (8, 8, P, "inout")],
    ("single_counter", "single_counter"): [(0, 4, I, "init_loop"), (4, 4, I, "addend"), (8, 8, P, "init_val"), (16, 8, P, "out")],
}


class _Backend:
    """The host backend's hooks called directly, as the core calls them."""

    def __init__(self) -> None:
        self.backend = HostBackend()
        self.device = self.backend.init()[0]
        self.images: list[object] = []

    def kernel(self, data: bytes, name: str) -> int:
        image = self.backend.load_binary(self.device, data)
        self.images.append(image)
        return self.backend.get_kernel(self.device, image, name)

    def close(self) -> None:
        for image in self.images:
            self.backend.unload_binary(self.device, image)
        self.backend.deinit_device(self.device)


@pytest.fixture
def backend():
    b = _Backend()
    yield b
    b.close()


def test_every_shipped_kernel_declares_its_parameters(backend: _Backend) -> None:
    assert {program for program, _ in _DECLARED} == set(offload_host.TEST_KERNELS)
    for (program, kernel), expected in _DECLARED.items():
        params = backend.backend.kernel_params(backend.device, backend.kernel(offload_host.build_test_kernel(program), kernel))
        assert params is not None, f"{program}:{kernel} is undeclared"
        assert [tuple(p) for p in params] == [tuple(ol.KernelParam(*e)) for e in expected], f"{program}:{kernel}"
        assert all(isinstance(p, ol.KernelParam) for p in params)


def test_declared_layout_matches_the_c_struct(backend: _Backend) -> None:
    source = r"""
#include <offload_host.h>
struct mixed { int8_t a; double b; uint16_t c; float d[3]; void *e; int64_t f; };
OFFLOAD_KERNEL_PARAMS(mixed, struct mixed,
                      OFFLOAD_INT(a),
                      OFFLOAD_FLOAT(b),
                      OFFLOAD_UINT(c),
                      OFFLOAD_BYTES(d),
                      OFFLOAD_POINTER(e),
                      OFFLOAD_INT(f));
OFFLOAD_KERNEL(mixed) { (void)OFFLOAD_ARGS(struct mixed); (void)offload_group_; }
OFFLOAD_KERNEL(undeclared) { (void)offload_args_; (void)offload_group_; }
"""
    data = offload_host.build_program(source, name="mixed")

    class Mixed(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int8), ("b", ctypes.c_double), ("c", ctypes.c_uint16), ("d", ctypes.c_float * 3), ("e", ctypes.c_void_p), ("f", ctypes.c_int64)]

    expected = [
        (getattr(Mixed, name).offset, getattr(Mixed, name).size, kind, name)
        for name, kind in zip("abcdef", (I, F, U, "bytes", P, I))
    ]
    assert [tuple(p) for p in backend.backend.kernel_params(backend.device, backend.kernel(data, "mixed"))] == [
        tuple(ol.KernelParam(*e)) for e in expected  # no element types declared: None, not const
    ]
    # undeclared: launchable, unchecked (the documented rule)
    assert backend.backend.kernel_params(backend.device, backend.kernel(data, "undeclared")) is None


def test_malformed_declaration_is_invalid_binary(backend: _Backend) -> None:
    source = r"""
#include <offload_host.h>
OFFLOAD_EXPORT const offload_kernel_params_t offload_params_k = {0x12345678u, 1, 8, 1, {{0, 8, 1, 0, "x"}}};
OFFLOAD_KERNEL(k) { (void)offload_args_; (void)offload_group_; }
OFFLOAD_EXPORT const offload_kernel_params_t offload_params_k2 = {OFFLOAD_PARAMS_MAGIC, 1, 4, 1, {{0, 8, 1, 0, "x"}}};
OFFLOAD_KERNEL(k2) { (void)offload_args_; (void)offload_group_; }
"""
    data = offload_host.build_program(source, name="malformed")
    for kernel, why in (("k", "magic"), ("k2", "does not fit")):
        with pytest.raises(ol.OffloadError) as info:
            backend.kernel(data, kernel)
        assert _code(info) is ol.ErrorCode.INVALID_BINARY
        assert why in str(info.value)


def test_header_compiles_as_cpp(tmp_path) -> None:
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    source = tmp_path / "k.cpp"
    source.write_text(
        "#include <offload_host.h>\n"
        "struct args { float *x; int n; };\n"
        "OFFLOAD_KERNEL_PARAMS(k, struct args, OFFLOAD_POINTER(x), OFFLOAD_INT(n));\n"
        "OFFLOAD_KERNEL_NO_PARAMS(none);\n"
        "OFFLOAD_KERNEL(k) { (void)offload_args_; (void)offload_group_; }\n"
    )
    out = tmp_path / "k.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-Wall", "-Werror", f"-I{offload_host.include_dir()}", "-o", str(out), str(source)], check=True)
    assert b"offload_params_k" in out.read_bytes()


# --- launch limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_global_ids_must_fit_32_bits(host: ol.DeviceHandle, axis: int) -> None:
    program = ol.olCreateProgram(host, offload_host.build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    groups, items = [1, 1, 1], [1, 1, 1]
    groups[axis], items[axis] = 2**31 + 1, 2
    launch = ol.KernelLaunchSizeArgs(3, tuple(groups), tuple(items))
    with pytest.raises(ol.OffloadError) as info:  # the core refuses first: MAX_WORK_SIZE_PER_DIMENSION
        ol.olLaunchKernel(None, host, kernel, None, launch)
    assert _code(info) is ol.ErrorCode.INVALID_SIZE
    assert f"NumGroups.{'xyz'[axis]}" in str(info.value)
    with pytest.raises(ol.OffloadError) as info:  # and the backend on its own, for its uint32 ids
        offload_host.HostBackend().launch_kernel(host.native, None, kernel.native, None, launch)
    assert _code(info) is ol.ErrorCode.INVALID_SIZE
    assert f"NumGroups.{'xyz'[axis]}" in str(info.value) and "32-bit" in str(info.value)
    ol.olDestroyProgram(program)


# --- the native symbol layer ----------------------------------------------------------------------


def test_native_symbols_are_the_library_own(tmp_path) -> None:
    from offload_host import _native

    path = tmp_path / "libuser.so"
    path.write_bytes(offload_host.build_program(_LIBC_PROGRAM, name="libc_user"))
    handle = _native.dl_open(str(path))
    try:
        assert _native.dl_symbol(handle, "free") is None  # libc's, reachable through dlsym
        assert _native.dl_symbol(handle, "environ") is None
        address, size, kind = _native.dl_symbol(handle, "counter")
        assert (size, kind) == (16, 1)
        from offload_host._elf import inspect

        assert address == _native.dl_base(handle) + inspect(path.read_bytes()).symbols["counter"].value
    finally:
        _native.dl_close(handle)


def test_real_libraries_pass_the_static_checks() -> None:
    """No false refusals: every shared object this process has mapped and every extension
    module of this Python passes the ELF checks (the trial load and dlopen decide the rest)."""
    import glob
    import sysconfig

    from offload_host._elf import ElfProblem, inspect

    paths = {line.split()[-1] for line in open("/proc/self/maps") if ".so" in line and line.split()[-1].startswith("/")}
    paths |= set(glob.glob(os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload", "*.so")))
    checked, refused = 0, []
    for path in sorted(paths):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if data[:4] != b"\x7fELF" or data[16] != 3:
            continue
        checked += 1
        try:
            inspect(data)
        except ElfProblem as exc:
            refused.append(f"{path}: {exc}")
    assert checked >= 5
    assert not refused, "\n".join(refused)
