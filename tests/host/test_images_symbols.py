"""Host program images, which symbols count: only the image's own, of the right kind (none of
its dependencies', through the core or the native symbol layer)."""

from __future__ import annotations

import ctypes
import os
import struct

import pytest

import offload as ol
import offload_host

from image_support import LIBC_PROGRAM, code_of


# --- symbols come from the image itself -------------------------------------------------------


def _assert_not_found(program: ol.ProgramHandle, names: dict[ol.SymbolKind, tuple[str, ...]]) -> None:
    """Each name, looked up as its kind, is NOT_FOUND."""
    for kind, of_kind in names.items():
        for name in of_kind:
            with pytest.raises(ol.OffloadError) as info:
                ol.olGetSymbol(program, name, kind)
            assert code_of(info) is ol.ErrorCode.NOT_FOUND, name


def test_symbols_of_dependencies_are_not_found(host: ol.DeviceHandle) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(LIBC_PROGRAM, name="libc_user"))
    try:
        libc = {ol.SymbolKind.KERNEL: ("system", "free", "malloc", "strlen"), ol.SymbolKind.GLOBAL_VARIABLE: ("environ", "stdout", "errno")}
        _assert_not_found(program, libc)
        # the image's own symbols, of the right kind only
        ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
        counter = ol.olGetSymbol(program, "counter", ol.SymbolKind.GLOBAL_VARIABLE)
        assert ol.olGetSymbolInfo(counter, ol.SymbolInfo.GLOBAL_VARIABLE_SIZE) == 16
        # a function is not a global, nor a thread-local one device global; data is not a kernel,
        # and a static function is not exported
        own = {ol.SymbolKind.GLOBAL_VARIABLE: ("foo", "per_thread"), ol.SymbolKind.KERNEL: ("counter", "keep_free", "helper")}
        _assert_not_found(program, own)
    finally:
        ol.olDestroyProgram(program)


def test_own_kernel_of_a_libc_program_runs(host: ol.DeviceHandle) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(LIBC_PROGRAM, name="libc_user"))
    kernel = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
    out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 8 * 4)
    ol.olLaunchKernel(None, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (8, 1, 1)))
    assert list((ctypes.c_uint32 * 8).from_address(out)) == [3 + i for i in range(8)]
    ol.olMemFree(out)
    ol.olDestroyProgram(program)


# --- the native symbol layer ----------------------------------------------------------------------


def test_native_symbols_are_the_library_own(tmp_path) -> None:
    from offload_host import _native

    path = tmp_path / "libuser.so"
    path.write_bytes(offload_host.build_program(LIBC_PROGRAM, name="libc_user"))
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
