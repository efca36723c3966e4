"""Programs on the host device: copied data, private temp copies, unload at destroy and shutdown."""

from __future__ import annotations

import ctypes
import glob
import os
import struct
import tempfile

import pytest

import offload as ol
import offload_host


def _temp_copies() -> set[str]:
    """The private copies of loaded images: open anonymous files (and any named temp copy)."""
    fds = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:offload-host-image"):
                fds.add(fd)
        except OSError:
            pass
    return fds | set(glob.glob(os.path.join(tempfile.gettempdir(), "offload-host-*.so")))


def test_program_data_is_copied(host: ol.DeviceHandle) -> None:
    data = bytearray(offload_host.build_test_kernel("foo"))
    program = ol.olCreateProgram(host, data)
    data[:] = b"\0" * len(data)  # the caller's buffer is gone; the program must not care
    kernel = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
    out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 64 * 4)
    ol.olLaunchKernel(None, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1)))
    assert list((ctypes.c_uint32 * 64).from_address(out)) == list(range(64))
    ol.olMemFree(out)
    ol.olDestroyProgram(program)


def test_same_bytes_twice_are_two_images(host: ol.DeviceHandle) -> None:
    data = offload_host.build_test_kernel("global")
    first, second = ol.olCreateProgram(host, data), ol.olCreateProgram(host, data)
    a = ol.olGetSymbolInfo(ol.olGetSymbol(first, "global", ol.SymbolKind.GLOBAL_VARIABLE), ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
    b = ol.olGetSymbolInfo(ol.olGetSymbol(second, "global", ol.SymbolKind.GLOBAL_VARIABLE), ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
    assert a != b
    ol.olDestroyProgram(first)
    ol.olDestroyProgram(second)


def test_destroy_unloads_that_image_and_runs_destructors(host: ol.DeviceHandle) -> None:
    before = _temp_copies()
    keep = ol.olCreateProgram(host, offload_host.build_test_kernel("foo"))
    program = ol.olCreateProgram(host, offload_host.build_test_kernel("global_dtor"))
    assert len(_temp_copies() - before) == 2
    out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 64 * 4)
    ctypes.memset(out, 0, 64 * 4)
    slot = ol.olGetSymbol(program, "dtor_out", ol.SymbolKind.GLOBAL_VARIABLE)
    slot_address = ol.olGetSymbolInfo(slot, ol.SymbolInfo.GLOBAL_VARIABLE_ADDRESS)
    pointer = ol.olMemAlloc(host, ol.AllocType.HOST, 8)
    ctypes.memmove(pointer, struct.pack("P", out), 8)
    ol.olMemcpy(None, slot_address, host, pointer, host, 8)
    ol.olDestroyProgram(program)
    assert list((ctypes.c_uint32 * 64).from_address(out)) == [1] * 64, "the destructor did not run at unload"
    assert len(_temp_copies() - before) == 1, "the unloaded image's temporary copy must be removed"
    with pytest.raises(ol.OffloadError) as info:
        ol.olGetSymbolInfo(slot, ol.SymbolInfo.KIND)
    assert info.value.code is ol.ErrorCode.INVALID_ARGUMENT, "symbols die with their program"
    with pytest.raises(ol.OffloadError):
        ol.olDestroyProgram(program)
    ol.olGetSymbol(keep, "foo", ol.SymbolKind.KERNEL)  # the other program is untouched
    for ptr in (out, pointer):
        ol.olMemFree(ptr)
    ol.olDestroyProgram(keep)


def test_shutdown_unloads_what_is_left(run_python) -> None:
    code = """
import glob, os, tempfile, offload as ol, offload_host
def copies():
    fds = {fd for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}") and os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:offload-host")}
    return fds | set(glob.glob(os.path.join(tempfile.gettempdir(), "offload-host-*.so")))
before = copies()
ol.olInit()
found = []
ol.olIterateDevices(lambda d, u: found.append(d) or True)
for name in ("foo", "global", "global_ctor"):
    ol.olCreateProgram(found[-1], offload_host.build_test_kernel(name))
assert len(copies() - before) == 3
ol.olShutDown()
assert copies() - before == set(), "shutdown left images loaded"
maps = open("/proc/self/maps").read()
assert "offload-host-" not in maps, "an image is still mapped"
print("ok")
"""
    assert run_python(code).stdout.strip() == "ok"


def test_invalid_binaries(host: ol.DeviceHandle) -> None:
    for data, why in [
        (b"", "empty"),
        (b"not an offload binary", "not an ELF"),
        (open("/proc/self/exe", "rb").read(4096), "not a shared object"),
    ]:
        with pytest.raises(ol.OffloadError) as info:
            ol.olCreateProgram(host, data)
        assert info.value.code is ol.ErrorCode.INVALID_BINARY, why
        assert ol.olIsValidBinary(host, data) is False
    assert ol.olIsValidBinary(host, offload_host.build_test_kernel("foo")) is True


def test_build_program_from_source(host: ol.DeviceHandle) -> None:
    source = r"""
#include <offload_host.h>
struct args { int32_t *out; int32_t k; };
OFFLOAD_KERNEL(scale) {
    const struct args *a = OFFLOAD_ARGS(struct args);
    OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = (int32_t)offload_global_id_x(tid) * a->k; }
}
"""
    program = ol.olCreateProgram(host, offload_host.build_program(source, name="scale"))
    kernel = ol.olGetSymbol(program, "scale", ol.SymbolKind.KERNEL)
    n = 4096
    out = ol.olMemAlloc(host, ol.AllocType.DEVICE, n * 4)
    ol.olLaunchKernel(None, host, kernel, struct.pack("Pi4x", out, 3), ol.KernelLaunchSizeArgs(1, (n // 32, 1, 1), (32, 1, 1)))
    assert list((ctypes.c_int32 * n).from_address(out)) == [3 * i for i in range(n)]
    ol.olMemFree(out)
    ol.olDestroyProgram(program)
