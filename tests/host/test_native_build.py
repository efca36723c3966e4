"""The host backend's native module used directly (no core API): the build helper (cache, flags,
errors), the symbols of a loaded program, dynamic loading with global constructors and destructors."""

from __future__ import annotations

import ctypes
import pathlib
import types
import uuid
from collections.abc import Callable

import pytest

from native_direct import KIND_FUNC, KIND_OBJECT, Buffer, alloc, build, kernel, load, native, pool, private_cache, ptr_args  # fixtures by name


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
