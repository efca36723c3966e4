"""Host program images, the private copy a program is loaded from: anonymous (memfd, else an
unlinked file in the temp dir), closed at unload, never left behind, even when killed mid-load."""

from __future__ import annotations

import os

import pytest

import offload as ol
import offload_host

from image_support import run_child


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
    result = run_child(_KILLED_MID_LOAD.format(setup=setup), env={"TMPDIR": str(tmp), "OFFLOAD_HOST_CACHE": str(tmp_path / "cache")})
    assert result.returncode == -9, result.stderr
    assert result.stdout.split() == ["loading"]
    assert os.listdir(tmp) == []


def test_temp_dir_fallback_loads_and_leaves_nothing(tmp_path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    result = run_child(
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
    result = run_child(
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
    result = run_child(
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
