"""The embedded runtime as C programs use liboffload: loaded with dlopen(RTLD_LOCAL) by a process
without Python, inside a Python process (the running interpreter), across threads, after fork, at
exit (olShutDown from a static destructor, also after a hosting interpreter has finished), and
Debian's llvm-offload-device-info, unchanged, listing offload's devices with LD_LIBRARY_PATH from
the documented command. Every program runs in a child: a crash fails one test."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import Capi, Debian, _tool, run
from test_capi_differential import simulated_hip  # noqa: F401 (fixtures; simulated_cuda: conftest)


@pytest.fixture(scope="module")
def runtime_program(build_program) -> Path:
    return build_program("runtime.c", link=False)


@pytest.mark.parametrize("mode", ["basic", "threads", "fork", "blocking", "gc"])
def test_dlopen_rtld_local_without_python(capi: Capi, runtime_program: Path, mode: str) -> None:
    env = capi.env()
    env.pop("LD_LIBRARY_PATH")  # the program opens the library by its path
    proc = run([str(runtime_program), mode, str(capi.libdir / "libLLVMOffload.so.22.1")], env, timeout=300)
    assert proc.returncode == 0 and f"OK {mode}" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    if mode == "fork":
        assert "does not survive fork()" in proc.stdout


def test_static_destructor_shuts_down(capi: Capi, build_program) -> None:
    program = build_program("static_dtor.cpp")
    proc = run([str(program)], capi.env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "main done" in proc.stdout
    assert proc.stderr.splitlines()[-2:] == ["ctor: OL_SUCCESS", "dtor: OL_SUCCESS"] or "dtor: OL_SUCCESS" in proc.stderr


def test_inside_a_python_process(capi: Capi) -> None:
    """ctypes loads the library RTLD_LOCAL: it uses the running interpreter, shares offload's runtime
    with the Python API, and its handles are the Python handles' addresses."""
    code = textwrap.dedent(f"""
        import ctypes, os
        import offload as ol
        lib = ctypes.CDLL({str(capi.libdir / 'libLLVMOffload.so.22.1')!r}, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        lib.olInit.restype = lib.olGetDeviceInfo.restype = lib.olShutDown.restype = lib.olIterateDevices.restype = ctypes.c_void_p
        assert lib.olInit() is None
        ol.olInit()
        found = []
        CB = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.c_void_p)
        assert lib.olIterateDevices(CB(lambda d, u: found.append(d) or True), None) is None
        mine = []
        ol.olIterateDevices(lambda d, u: mine.append(d) or True)
        assert found == [id(d) for d in mine], (found, mine)
        name = ctypes.create_string_buffer(256)
        for address, device in zip(found, mine):
            assert lib.olGetDeviceInfo(ctypes.c_void_p(address), 2, 256, name) is None
            assert name.value.decode() == ol.olGetDeviceInfo(device, ol.DeviceInfo.NAME)
        held = ctypes.PyDLL(lib._name, mode=os.RTLD_LOCAL | os.RTLD_NOW)  # calls made holding the GIL
        held.olMemAlloc.restype = held.olMemFree.restype = held.olIterateDevices.restype = ctypes.c_void_p
        address = ctypes.c_void_p()
        assert held.olMemAlloc(ctypes.c_void_p(found[-1]), 0, 64, ctypes.byref(address)) is None
        assert held.olIterateDevices(CB(lambda d, u: True), None) is None
        assert held.olMemFree(address) is None
        ol.olShutDown()
        assert lib.olShutDown() is None
        print("OK python", len(found))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=capi.env(), timeout=120)
    assert proc.returncode == 0 and "OK python" in proc.stdout, proc.stdout + proc.stderr[-3000:]


def test_static_destructor_after_the_interpreter_finished(capi: Capi, build_program) -> None:
    """A library loaded into a Python process calls olShutDown from its static destructor, which runs
    in exit() after Python has finalised: a clean OL_SUCCESS, no crash."""
    library = build_program("static_dtor.cpp", "-shared", "-fPIC", "-DAS_LIBRARY")
    code = f"import ctypes; ctypes.CDLL({str(library)!r}); import offload; print('loaded')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=capi.env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ctor: OL_SUCCESS" in proc.stderr and "dtor: OL_SUCCESS" in proc.stderr, proc.stderr[-3000:]


def _device_info(capi: Capi, debian: Debian, *extra: str, **env: str) -> str:
    """The tool's listing, with LD_LIBRARY_PATH from the documented command (then ``extra`` folders)."""
    proc = _run_device_info(capi, debian, *extra, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc.stdout


def _run_device_info(capi: Capi, debian: Debian, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    libdir = subprocess.run([sys.executable, "-m", "offload_capi", "--libdir"], capture_output=True, text=True, check=True).stdout.strip()
    path = ":".join([libdir, *extra, str(debian.libdir)])  # Debian's folder for libLLVM.so.22.1 only
    return run([str(debian.device_info)], {**capi.env(), **env, "LD_LIBRARY_PATH": path})


def test_llvm_offload_device_info_lists_the_host_device(capi: Capi, debian: Debian) -> None:
    out = _device_info(capi, debian, OFFLOAD_BACKENDS="host")
    assert "Platform Backend: HOST" in out and "Virtual Host Device" not in out
    assert "Platform Name: host" in out


def test_llvm_offload_device_info_lists_simulated_gpus(capi: Capi, debian: Debian, simulated_cuda: Path) -> None:
    # PoCL is left out: LLVM 22's tool cannot print its long platform version (docs/capi.md)
    out = _device_info(capi, debian, str(simulated_cuda), GPUSIM_DEVICES="2", OFFLOAD_BACKENDS="host,cuda")
    assert out.count("Platform Backend: CUDA") == 2 and "Platform Backend: HOST" in out
    assert "Num Devices: 3" in out


def test_llvm_offload_device_info_lists_simulated_amdgpu(capi: Capi, debian: Debian, simulated_hip: Path) -> None:
    out = _device_info(capi, debian, str(simulated_hip), ROCM_PATH=str(simulated_hip / "no-rocm"), OFFLOAD_BACKENDS="host,amdgpu")
    assert "Platform Backend: AMDGPU" in out and "Platform Backend: HOST" in out, out


def test_llvm_offload_device_info_stops_at_pocl_version_as_documented(capi: Capi, debian: Debian) -> None:
    """docs/capi.md: LLVM 22's tool reads every platform string into a 24-byte buffer, and PoCL's
    OpenCL version is longer: it lists PoCL's device, then stops there with liboffload's own
    INVALID_SIZE (offload answers the size query whole: olGetPlatformInfoSize says how long)."""
    import importlib.util

    if importlib.util.find_spec("offload_opencl") is None:
        pytest.skip("offload-opencl is not installed in this venv (scripts/test.sh installs it with pyopencl[pocl])")
    import offload as ol

    probe = ("import offload as ol; ol.olInit(); d = []; ol.olIterateDevices(lambda x, _: d.append(x) or True);"
             " print(len(ol.olGetPlatformInfo(ol.olGetDeviceInfo(d[0], ol.DeviceInfo.PLATFORM), ol.PlatformInfo.VERSION).encode()) + 1 if d else 0)")
    version = run([sys.executable, "-c", probe], capi.env(OFFLOAD_BACKENDS="opencl"))
    assert version.returncode == 0, version.stderr[-2000:]
    if version.stdout.strip() == "0":
        pytest.skip("offload-opencl finds no OpenCL device here (no PoCL)")
    assert int(version.stdout.strip()) > 24, version.stdout  # the documented reason: longer than the tool's buffer
    tool = _run_device_info(capi, debian, OFFLOAD_BACKENDS="host,opencl")
    assert tool.returncode != 0 and "Platform Name: opencl" in tool.stdout, tool.stdout + tool.stderr[-2000:]
    assert "Platform Version: " in tool.stdout and "[Liboffload error 8]: provided size is invalid" in tool.stdout + tool.stderr
    assert ol.ErrorCode.INVALID_SIZE.value == 8


def test_libdir_command(capi: Capi) -> None:
    for flag, expected in (("--libdir", str(capi.libdir)), ("--includedir", str(capi.includedir))):
        proc = subprocess.run([sys.executable, "-m", "offload_capi", flag], capture_output=True, text=True, check=True)
        assert proc.stdout.strip() == expected
    assert (capi.libdir / "libLLVMOffload.so.22.1").is_file() and (capi.includedir / "offload" / "OffloadAPI.h").is_file()
    soname = subprocess.run(["readelf", "-d", str(capi.libdir / "libLLVMOffload.so.22.1")], capture_output=True, text=True)
    if soname.returncode == 0:
        assert "Library soname: [libLLVMOffload.so.22.1]" in soname.stdout


def test_validation_off_never_crashes(capi: Capi, build_program) -> None:
    """OFFLOAD_DISABLE_VALIDATION: the NULL handles, pointers and out-parameters of the differential
    suite reach offload's checks (errors, never a crash; LLVM 22's library crashes on several)."""
    program = build_program("differential.cpp", "-std=c++17")
    proc = run([str(program), "work", "4"], capi.env(OFFLOAD_DISABLE_VALIDATION="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("CASE ")]
    assert len(lines) >= 110 and not any("validation failure" in line for line in lines)
    assert "CASE memory.alloc_null_device INVALID_NULL_HANDLE" in proc.stdout


def test_r1_abi_level(capi: Capi, tmp_path: Path) -> None:
    """R1's library and header (``--abi r1``): a C program of R1's API runs on offload's host device."""
    flags = {flag: subprocess.run([sys.executable, "-m", "offload_capi", "--abi", "r1", flag], capture_output=True, text=True,
                                  check=True).stdout.strip() for flag in ("--cflags", "--libs", "--libdir")}
    exe = tmp_path / "r1"
    source = Path(__file__).resolve().parent / "programs" / "r1.c"
    subprocess.run([_tool("gcc"), "-Wall", str(source), *flags["--cflags"].split(), *flags["--libs"].split(), "-o", str(exe)], check=True)
    proc = run([str(exe)], {**capi.env(), "LD_LIBRARY_PATH": flags["--libdir"]})
    assert proc.returncode == 0 and "OK r1" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True)
    assert needed.returncode != 0 or "libLLVMOffload.so.23.0git" in needed.stdout
