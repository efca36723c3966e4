"""The differential suite (programs/differential.cpp, built once against the packaged OffloadAPI.h):
its common cases run against Debian's libLLVMOffload.so.22.1 and against offload's, and must print
the same results, error codes and validation details, and (OFFLOAD_TRACE=1) the same trace lines
but for addresses and what derives from the device's name; its work cases run against offload's on
the host device, the simulated CUDA driver and HIP runtime, and PoCL (LLVM 22's virtual host device cannot allocate:
the real library crashes there, so those cases are offload's alone). docs/capi.md lists the
differences."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from conftest import Capi, Debian, run

# The work section's expected lines (after "CASE "), on any device: the device's own values are
# not printed, only what liboffload's semantics fix.
WORK = [
    "work.device_found OL_SUCCESS 1", "work.alloc_device OL_SUCCESS nonnull:1", "work.mem_info_size OL_SUCCESS 64",
    "work.mem_info_base_interior OL_SUCCESS base:1", "work.mem_info_type OL_SUCCESS 1", "work.mem_info_device OL_SUCCESS dev:1",
    "work.mem_info_unknown NOT_FOUND", "work.fill_sync OL_SUCCESS", "work.memcpy_back OL_SUCCESS 7 7",
    "work.memcpy_sync OL_SUCCESS", "work.memcpy_past_end INVALID_SIZE", "work.create_queue OL_SUCCESS nonnull:1",
    "work.queue_device OL_SUCCESS dev:1", "work.host_function OL_SUCCESS", "work.memcpy_queued OL_SUCCESS",
    "work.create_event OL_SUCCESS nonnull:1", "work.sync_event OL_SUCCESS ran:1 copied:1",
    "work.event_complete OL_SUCCESS 1", "work.event_queue OL_SUCCESS same:1", "work.wait_events OL_SUCCESS",
    "work.wait_null_events INVALID_NULL_POINTER [validation failure: NULL == Events]", "work.wait_zero_events OL_SUCCESS",
    "work.sync_queue OL_SUCCESS", "work.queue_empty OL_SUCCESS 1", "work.destroy_event OL_SUCCESS",
    "work.destroy_queue OL_SUCCESS", "work.stale_queue INVALID_QUEUE", "work.is_valid_garbage OL_SUCCESS 0",
    "work.create_program_garbage INVALID_BINARY", "work.free OL_SUCCESS", "work.double_free INVALID_ARGUMENT",
    "work.free_unknown INVALID_ARGUMENT",
]


@pytest.fixture(scope="module")
def differential(build_program) -> Path:
    return build_program("differential.cpp", "-std=c++17")


def _cases(stdout: str) -> list[str]:
    return [line[5:] for line in stdout.splitlines() if line.startswith("CASE ")]


def _masked_trace(stderr: str) -> list[str]:
    """Addresses masked, and the values that come from the device's name (its text, its size, and a
    stale PropSizeRet the printer reads back from the caller's variable after a failed call)."""
    text = re.sub(r"0x[0-9a-f]+", "0xADDR", stderr)
    text = re.sub(r"(OL_DEVICE_INFO_NAME, \.PropSize = \d+, \.PropValue = 0xADDR) \([^)]*\)", r"\1 (NAME)", text)
    text = re.sub(r"(\.PropSizeRet = 0xADDR) \(\d+\)(\)-> OL_ERRC_INVALID_ENUMERATION)", r"\1 (N)\2", text)
    text = re.sub(r"(OL_DEVICE_INFO_NAME, \.PropSizeRet = 0xADDR) \(\d+\)", r"\1 (N)", text)
    # trace lines only (a warning some library prints on stderr is no trace line)
    return [line for line in text.splitlines() if line.startswith(("---> ", "     *Error Details* ", "(."))]


def test_common_cases_match_liboffload_22(capi: Capi, debian: Debian, differential: Path) -> None:
    for _ in range(20):  # 20 runs of 20: a race would show as one differing run
        theirs = run([str(differential)], {**capi.env(), "LD_LIBRARY_PATH": str(debian.libdir)})
        ours = run([str(differential)], capi.env(OFFLOAD_BACKENDS="host"))  # the host device, as LLVM 22's one device
        assert theirs.returncode == 0, theirs.stderr[-2000:]
        assert ours.returncode == 0, ours.stderr[-2000:]
        assert _cases(ours.stdout) == _cases(theirs.stdout)
    assert len(_cases(ours.stdout)) >= 80
    groups = {case.split(".")[0] for case in _cases(ours.stdout)}
    assert groups >= {"init", "device", "platform", "memory", "queue", "event", "program", "symbol", "kernel", "result"}


def test_common_traces_match_liboffload_22(capi: Capi, debian: Debian, differential: Path) -> None:
    theirs = run([str(differential)], {**capi.env(OFFLOAD_TRACE="1"), "LD_LIBRARY_PATH": str(debian.libdir)})
    ours = run([str(differential)], capi.env(OFFLOAD_TRACE="1", OFFLOAD_BACKENDS="host"))
    assert theirs.returncode == 0 and ours.returncode == 0, ours.stderr[-2000:]
    mine, real = _masked_trace(ours.stderr), _masked_trace(theirs.stderr)
    assert len(real) > 100
    assert mine == real


def _work(capi: Capi, differential: Path, backend: int, **env: str) -> list[str]:
    proc = run([str(differential), "work", str(backend)], capi.env(**env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _cases(proc.stdout)
    return [line for line in lines if line.startswith("work.")]


def test_work_cases_on_the_host_device_20_runs(capi: Capi, differential: Path) -> None:
    for _ in range(20):
        assert _work(capi, differential, 4) == WORK


def test_work_cases_on_the_simulated_cuda_driver(capi: Capi, differential: Path, simulated_cuda: Path) -> None:
    for _ in range(20):
        assert _work(capi, differential, 1, LD_LIBRARY_PATH=str(simulated_cuda), GPUSIM_DEVICES="2") == WORK


def test_work_cases_on_pocl(capi: Capi, differential: Path) -> None:
    if importlib.util.find_spec("offload_opencl") is None:
        pytest.skip("offload-opencl is not installed in this venv (scripts/test.sh installs it with pyopencl[pocl])")
    for _ in range(20):  # offload-opencl's platforms are OL_PLATFORM_BACKEND_UNKNOWN
        assert _work(capi, differential, 0, OFFLOAD_BACKENDS="host,opencl") == WORK


@pytest.fixture(scope="module")
def simulated_hip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("offload_amdgpu") is None:
        pytest.skip("offload-amdgpu is not installed in this venv")
    sim_dir = Path(__file__).resolve().parents[1] / "simulators" / "hip"
    if str(sim_dir) not in sys.path:
        sys.path.insert(0, str(sim_dir))
    import hipsim

    return Path(hipsim.build_runtime(tmp_path_factory.mktemp("hipsim")).parent)


def test_work_cases_on_the_simulated_hip_runtime(capi: Capi, differential: Path, simulated_hip: Path) -> None:
    env = {"LD_LIBRARY_PATH": str(simulated_hip), "ROCM_PATH": str(simulated_hip / "no-rocm")}
    assert _work(capi, differential, 2, **env) == WORK


def test_offload_json_trace_through_the_c_abi(capi: Capi, differential: Path) -> None:
    """OFFLOAD_TRACE=json is offload's own tracer's: one JSON object per call that reaches the flat
    API (C validation failures and cached info answers do not), no liboffload lines."""
    import json

    proc = run([str(differential), "work", "4"], capi.env(OFFLOAD_TRACE=" JSON ", OFFLOAD_BACKENDS="host"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    apis = [event["api"] for event in events]
    assert apis[0] == "olInit" and "olMemAlloc" in apis and "olLaunchHostFunction" in apis, apis
    assert not any(line.startswith("---> ") for line in proc.stderr.splitlines())
    stale = [e for e in events if e["api"] == "olMemFree" and e["result"] != "OL_SUCCESS"]
    assert stale and stale[0]["result"] == "OL_ERRC_INVALID_ARGUMENT", stale


def test_work_cases_on_offload_remote(capi: Capi, differential: Path) -> None:
    """A Python backend of another distribution (offload-remote: a device in a server process whose
    memory the client cannot touch) serves an unchanged C program too."""
    if importlib.util.find_spec("offload_remote") is None:
        pytest.skip("offload-remote is not installed in this venv (scripts/test.sh installs it)")
    # offload-remote's platform is OL_PLATFORM_BACKEND_UNKNOWN (0)
    assert _work(capi, differential, 0, OFFLOAD_REMOTE="local", OFFLOAD_BACKENDS="remote,host") == WORK
