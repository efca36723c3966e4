"""Fixtures of the AMDGPU backend's tests: the simulated HIP runtime, clang-19 programs, Debian's HIP.

Everything that loads a HIP runtime (simulated or real) runs in a child process (``hip_child``)
with that runtime first on ``LD_LIBRARY_PATH``; builds happen once per test session. Where
clang-19 cannot be installed (not root, no apt) the tests that need its output skip with the
reason; the simulator itself needs only gcc.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import child_environ

SIM_DIR = Path(__file__).resolve().parents[1] / "simulators" / "hip"
if str(SIM_DIR) not in sys.path:
    sys.path.insert(0, str(SIM_DIR))

import hipsim  # noqa: E402  (tests/simulators/hip/hipsim.py)


@dataclass(frozen=True)
class HipBuild:
    """Where the session's builds are."""

    runtime: Path  # folder holding the simulated libamdhip64.so
    registry: Path  # GPUSIM_KERNELS
    programs: Path  # <name>.hsaco for the simulator's target (gfx90a)
    other: Path  # <name>.hsaco for OTHER_TARGET (gfx1030)
    bundles: Path  # <name>.bundle with gfx90a and gfx1030 entries (when the bundler exists)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a child process that uses the simulated HIP runtime."""
        return {
            "LD_LIBRARY_PATH": str(self.runtime),
            "GPUSIM_KERNELS": str(self.registry),
            "OFFLOAD_AMDGPU_PROGRAMS": str(self.programs),
            "ROCM_PATH": str(self.runtime / "no-rocm"),  # never /opt/rocm
            **extra,
        }


def skip_loudly(what: str, reason: str) -> None:
    """Skip with the reason also written to the real stderr (visible without ``-rs``)."""
    print(f"\nSKIP ({what}): {reason}", file=sys.__stderr__, flush=True)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def hip_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the simulated libamdhip64.so (needs only gcc)."""
    return hipsim.build_runtime(tmp_path_factory.getbasetemp() / "hipsim").parent


@pytest.fixture(scope="session")
def clang() -> str:
    try:
        return hipsim.clang_toolchain()
    except hipsim.Unavailable as exc:
        skip_loudly("AMDGPU programs need clang-19", str(exc))


@pytest.fixture(scope="session")
def hip_build(hip_runtime: Path, clang: str, tmp_path_factory: pytest.TempPathFactory) -> HipBuild:
    """Every test kernel built for gfx90a (with its host build registered) and for gfx1030."""
    base = tmp_path_factory.getbasetemp() / "hipsim"
    build = HipBuild(hip_runtime, base / "registry", base / "gfx90a", base / "gfx1030", base / "bundles")
    sources = sorted(hipsim.KERNELS.glob("*.cu"))
    if not sources:
        pytest.fail(f"no single-source test kernels in {hipsim.KERNELS}")
    for source in sources:
        code = hipsim.build_code_object(source, hipsim.SIM_TARGET, build.programs / f"{source.stem}.hsaco")
        hipsim.build_host(source, code.read_bytes(), build.registry, base / "host")
        hipsim.build_code_object(source, hipsim.OTHER_TARGET, build.other / f"{source.stem}.hsaco")
    return build


@pytest.fixture(scope="session")
def foo_bundle(hip_build: HipBuild, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clang offload bundle of foo.cu (gfx90a + gfx1030), its gfx90a entry registered."""
    if not hipsim.bundler():
        skip_loudly("offload bundles", "clang-offload-bundler-19 (clang-tools-19) is not installed")
    from offload_amdgpu import Target, code_object_for

    path = hipsim.build_bundle(
        hipsim.KERNELS / "foo.cu", [hipsim.SIM_TARGET, hipsim.OTHER_TARGET], hip_build.bundles / "foo.bundle"
    )
    entry = code_object_for(path.read_bytes(), Target.parse("gfx90a:sramecc+:xnack-")).data
    hipsim.build_host(
        hipsim.KERNELS / "foo.cu", entry, hip_build.registry, tmp_path_factory.getbasetemp() / "hipsim" / "host"
    )
    return path


@pytest.fixture(scope="session")
def real_hip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The library folder of Debian's real HIP 5.2 runtime, unpacked for this session."""
    try:
        return hipsim.unpack_real_hip(tmp_path_factory.getbasetemp() / "real-hip")
    except hipsim.Unavailable as exc:
        skip_loudly("the real HIP runtime", str(exc))


ChildRunner = Callable[..., Any]

#: Only when coverage.py measures the children (COVERAGE_PROCESS_START): HIP's own threads run the
#: backend's host-function trampoline, and coverage.py traces only threads Python started, so the
#: trampoline first installs the tracer on its thread. Nothing changes otherwise.
COVERAGE_SHIM = """
import os as _os
if _os.environ.get("COVERAGE_PROCESS_START"):
    import threading as _threading
    try:
        from offload_amdgpu import _queue as _amdgpu_queue
    except ImportError:
        _amdgpu_queue = None
    if _amdgpu_queue is not None:
        def _traced(run):
            def traced_run(self, key):
                if sys.gettrace() is None and _threading.gettrace() is not None:
                    sys.settrace(_threading.gettrace())
                return run(self, key)
            return traced_run
        _amdgpu_queue.HostCalls._run = _traced(_amdgpu_queue.HostCalls._run)
"""


@pytest.fixture
def hip_child() -> ChildRunner:
    """Run a Python snippet in a child process with ``env``; returns the JSON it printed last.

    The snippet prints its result with ``emit(value)`` (json). A crash or a non-zero exit fails
    the test with the child's output.
    """

    def run(code: str, env: dict[str, str], timeout: float = 120) -> Any:
        prologue = "import json, sys\ndef emit(value):\n    print('RESULT ' + json.dumps(value), flush=True)\n"
        prologue += COVERAGE_SHIM
        full_env = child_environ(("OFFLOAD_", "GPUSIM_"))
        full_env.update(env)
        proc = subprocess.run(
            [sys.executable, "-c", prologue + code], capture_output=True, text=True, env=full_env, timeout=timeout
        )
        results = [line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or not results:
            raise AssertionError(f"child exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return json.loads(results[-1])

    return run
