"""liboffload main's ABI level (``python -m offload_capi --abi main``): a C program of main's API
(programs/main_level.c: olInit(const ol_init_args_t *), contexts, the Context-first allocations,
queues, programs and memory info, host and aligned allocations, prefetch, profiled events,
platform/symbol/compatible-device iteration, per-argument and cooperative launches, main's
numbering and validation) built against main's generated header and run on offload's host
device, and with ol_init_args_t asking for CUDA on the simulated CUDA driver; programs/main_nulls.c:
NULLs and stale pointers with validation on and off."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Capi, _tool, run

SOURCE = Path(__file__).resolve().parent / "programs" / "main_level.c"
OL_PLATFORM_BACKEND_CUDA = 1


@pytest.fixture(scope="module")
def main_level(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the program built with the documented flags of --abi main, those flags, the saxpy image)."""
    offload_host = pytest.importorskip("offload_host")
    flags = {flag: subprocess.run([sys.executable, "-m", "offload_capi", "--abi", "main", flag], capture_output=True,
                                  text=True, check=True).stdout.strip() for flag in ("--cflags", "--libs", "--libdir")}
    out = tmp_path_factory.mktemp("capi-main")
    exe = out / "main_level"
    subprocess.run([_tool("gcc"), "-Wall", "-Wextra", "-Werror", str(SOURCE), *flags["--cflags"].split(),
                    *flags["--libs"].split(), "-o", str(exe)], check=True)
    image = out / "saxpy.bin"
    image.write_bytes(offload_host.build_test_kernel("saxpy"))
    return exe, flags, image


def test_main_level_on_the_host_device(capi: Capi, main_level: tuple[Path, dict[str, str], Path]) -> None:
    exe, flags, image = main_level
    for _ in range(5):
        proc = run([str(exe), str(image)], {**capi.env(), "LD_LIBRARY_PATH": flags["--libdir"]})
        assert proc.returncode == 0 and "OK main" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True)
    assert needed.returncode != 0 or "libLLVMOffload.so.23.0git" in needed.stdout


def test_main_level_on_the_simulated_cuda_driver(capi: Capi, main_level: tuple[Path, dict[str, str], Path],
                                                 simulated_cuda: Path) -> None:
    """ol_init_args_t asks for CUDA: the host platform and the simulated GPUs come up, and the
    memory cases run in a context of the first GPU too."""
    exe, flags, image = main_level
    env = {**capi.env(GPUSIM_DEVICES="2"), "LD_LIBRARY_PATH": f"{flags['--libdir']}:{simulated_cuda}"}
    proc = run([str(exe), str(image), str(OL_PLATFORM_BACKEND_CUDA)], env)
    assert proc.returncode == 0 and "OK main" in proc.stdout, proc.stdout + proc.stderr[-3000:]


def test_main_level_traces_main_signatures(capi: Capi, main_level: tuple[Path, dict[str, str], Path]) -> None:
    """OFFLOAD_TRACE=1: liboffload's lines with main's parameters (the Context first, InitArgs,
    Flags, Properties and the per-argument NumArgs/ArgPtrs/ArgSizes)."""
    exe, flags, image = main_level
    proc = run([str(exe), str(image)], {**capi.env(OFFLOAD_TRACE="1"), "LD_LIBRARY_PATH": flags["--libdir"]})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("---> olInit(.InitArgs = 0x") and lines[0].endswith(")-> OL_SUCCESS")
    assert any(line.startswith("---> olMemAlloc(.Context = 0x") for line in lines)
    assert any(line.startswith("---> olCreateEvent(") and ".Flags = OL_EVENT_FLAGS_ENABLE_PROFILING" in line for line in lines)
    launches = [line for line in lines if line.startswith("---> olLaunchKernel(")]
    assert launches and all(".Properties = " in line and ".NumArgs = " in line for line in launches)
    assert any(re.search(r"\.NumArgs = 4, \.ArgPtrs = 0x[0-9a-f]+ \{(0x[0-9a-f]+, ){3}0x[0-9a-f]+\}, "
                         r"\.ArgSizes = 0x[0-9a-f]+ \{4, 8, 8, 8\}\)-> OL_SUCCESS", line) for line in launches), launches
    assert any(re.search(r"^---> olCreateContext\(\.DevicesCount = 1, \.Devices = 0x[0-9a-f]+ \{0x[0-9a-f]+\}, ", line)
               for line in lines)
    assert any("OL_ERRC_INVALID_CONTEXT" in line for line in lines)


# (case, its code with validation, its code with OFFLOAD_DISABLE_VALIDATION: offload's own checks)
NULL_CASES = [
    ("init", "SUCCESS", "SUCCESS"),
    ("create_context_null_devices", "INVALID_NULL_POINTER", "INVALID_ARGUMENT"),
    ("context_info_null", "INVALID_NULL_HANDLE", "INVALID_NULL_HANDLE"),
    ("destroy_context_null", "INVALID_NULL_HANDLE", "INVALID_NULL_HANDLE"),
    ("launch_null_arguments", "INVALID_ARGUMENT", "INVALID_NULL_HANDLE"),
    ("prefetch_null_arrays", "INVALID_NULL_POINTER", "INVALID_NULL_HANDLE"),
    ("alloc_host_null_device", "INVALID_NULL_HANDLE", "INVALID_NULL_HANDLE"),
    ("iterate_platforms_null", "INVALID_NULL_POINTER", "INVALID_ARGUMENT"),
    ("iterate_symbols_null", "INVALID_NULL_HANDLE", "INVALID_NULL_HANDLE"),
    ("mem_info_bogus_context", "INVALID_CONTEXT", "INVALID_CONTEXT"),
    ("queue_bogus_context", "INVALID_NULL_HANDLE", "INVALID_CONTEXT"),
    ("shutdown", "SUCCESS", "SUCCESS"),
    ("init_unknown_backend", "INVALID_ENUMERATION", "INVALID_ENUMERATION"),
]


@pytest.mark.parametrize("validation", [True, False])
def test_main_level_nulls_never_crash(capi: Capi, tmp_path: Path, validation: bool) -> None:
    """NULLs and stale pointers at main's level: the table's conditions answer them, or, with
    validation off, offload's own checks (an error, never a crash)."""
    from offload._values.enums import ErrorCode, c_value

    flags = {flag: subprocess.run([sys.executable, "-m", "offload_capi", "--abi", "main", flag], capture_output=True,
                                  text=True, check=True).stdout.strip() for flag in ("--cflags", "--libs", "--libdir")}
    exe = tmp_path / "main_nulls"
    subprocess.run([_tool("gcc"), "-Wall", "-Werror", str(SOURCE.with_name("main_nulls.c")), *flags["--cflags"].split(),
                    *flags["--libs"].split(), "-o", str(exe)], check=True)
    extra = {} if validation else {"OFFLOAD_DISABLE_VALIDATION": "1"}
    proc = run([str(exe)], {**capi.env(OFFLOAD_BACKENDS="host", **extra), "LD_LIBRARY_PATH": flags["--libdir"]})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    got = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("CASE ")]
    expected = [[name, str(c_value(ErrorCode[on if validation else off], "main"))] for name, on, off in NULL_CASES]
    assert got == expected
