"""Host program images, what loads: PIE executables and broken program headers are refused as
dlopen does, undefined symbols without loading, the global scope resolves, no constructor runs
for a validity check."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess

import pytest

import offload as ol
import offload_host

from image_support import code_of, run_child


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
    assert code_of(info) is ol.ErrorCode.INVALID_BINARY
    assert "position-independent executable" in str(info.value)


def test_phdr_type_flip_is_refused_not_a_crash() -> None:
    """The issue's reproduction: so[e_phoff] ^= 1 turns the first PT_LOAD into PT_NULL."""
    result = run_child(
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
    assert code_of(info) is ol.ErrorCode.INVALID_BINARY
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
