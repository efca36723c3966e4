"""Host programs built for the machine they run on: build_program's default flags, the caller's
override, the cache key, and the vectorisable OFFLOAD_FOR_EACH_GLOBAL_X loop of offload_host.h."""

from __future__ import annotations

import ctypes
import pathlib
import shlex
import struct
import subprocess

import pytest

import offload as ol
import offload_host
from offload_host import build

COUNTER = r"""
#include <offload_host.h>
struct args { uint32_t *out; uint64_t n; };
OFFLOAD_KERNEL_PARAMS(count_below, struct args, OFFLOAD_POINTER(out), OFFLOAD_UINT(n));
OFFLOAD_KERNEL(count_below) {
    const struct args *a = OFFLOAD_ARGS(struct args);
    OFFLOAD_FOR_EACH_GLOBAL_X_BELOW(i, a->n) { a->out[i] += 1; }
}
OFFLOAD_KERNEL_PARAMS(count_all, struct args, OFFLOAD_POINTER(out), OFFLOAD_UINT(n));
OFFLOAD_KERNEL(count_all) {
    const struct args *a = OFFLOAD_ARGS(struct args);
    OFFLOAD_FOR_EACH_GLOBAL_X(i) { a->out[i] += 1; }
}
"""


def test_machine_flags_are_the_default() -> None:
    flags = offload_host.machine_flags()
    assert flags[0] == "-O3" and flags[-1] == "-ffp-contract=off"
    assert set(flags[1:-1]) <= {"-march=native", "-mcpu=native"}
    source = offload_host.test_kernel_source("saxpy")
    assert offload_host.build_program(source, name="saxpy") == offload_host.build_program(
        source, name="saxpy", machine_flags=flags
    )


def test_machine_flags_override_and_cache_key(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_HOST_CACHE", str(tmp_path))
    source = offload_host.test_kernel_source("saxpy") + f"\n/* {tmp_path.name} */\n"
    native = offload_host.build_program(source, name="saxpy")
    portable = offload_host.build_program(source, name="saxpy", machine_flags=("-O2",))
    assert len(list(tmp_path.glob("*.so"))) == 2  # one cache entry per set of flags
    assert native != portable
    with pytest.raises(TypeError, match="machine_flags"):
        offload_host.build_program(source, machine_flags="-O2")  # type: ignore[arg-type]


def test_cache_key_holds_the_cpu_only_for_native_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [build._cache_key("cc", ["-march=native"], "int x;"), build._cache_key("cc", ["-O2"], "int x;")]
    monkeypatch.setattr(build, "_cpu_ids", ["another CPU"])
    assert build._cache_key("cc", ["-march=native"], "int x;") != keys[0]
    assert build._cache_key("cc", ["-O2"], "int x;") == keys[1]


def test_shipped_saxpy_loop_is_vectorised(tmp_path: pathlib.Path) -> None:
    compiler = build._compiler()
    version = subprocess.run([*compiler, "--version"], capture_output=True, text=True).stdout
    if "Free Software Foundation" not in version:
        pytest.skip(f"{shlex.join(compiler)} is not GCC (the check reads -fopt-info-vec)")
    source = tmp_path / "saxpy.c"
    source.write_text(offload_host.test_kernel_source("saxpy"))
    proc = subprocess.run(
        [*compiler, "-shared", "-fPIC", "-std=gnu11", *offload_host.machine_flags(), f"-I{offload_host.include_dir()}",
         "-fopt-info-vec-optimized", "-o", str(tmp_path / "saxpy.so"), str(source)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "loop vectorized" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("kernel", "group", "expected"),
    [
        ("count_below", (256, 1, 1), lambda i: 1 if i < 1000 else 0),  # the last group is cut at n
        ("count_all", (256, 1, 1), lambda i: 1),
        ("count_all", (64, 2, 1), lambda i: 2),  # one pass per (y, z) row of the group
    ],
)
def test_for_each_global_x(host: ol.DeviceHandle, kernel: str, group: tuple[int, int, int], expected) -> None:
    program = ol.olCreateProgram(host, offload_host.build_program(COUNTER, name="counter"))
    size = 1024
    out = ol.olMemAlloc(host, ol.AllocType.DEVICE, size * 4)
    try:
        ctypes.memset(out, 0, size * 4)
        symbol = ol.olGetSymbol(program, kernel, ol.SymbolKind.KERNEL)
        launch = ol.KernelLaunchSizeArgs(1, (size // group[0], 1, 1), group)
        ol.olLaunchKernel(None, host, symbol, struct.pack("PQ", out, 1000), launch)
        assert list((ctypes.c_uint32 * size).from_address(out)) == [expected(i) for i in range(size)]
    finally:
        ol.olMemFree(out)
        ol.olDestroyProgram(program)
