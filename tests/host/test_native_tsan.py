"""The host backend's native queues and pool, and the core's compiled path, under ThreadSanitizer.

The extensions (offload_host._native and offload._compiled._fastpath) are rebuilt with ``-fsanitize=thread``
into private copies of both packages and ``stress/queue_stress.py`` runs against them in a child
process (libtsan preloaded): any data race or lock-order inversion ThreadSanitizer sees in
_native.c / _hostq.c / _hostentry.c / _fastpath*.c fails the test, as does a lost launch or host
function. The stress runs with the compiled path (its launches of a declared kernel go from the
core's C to the host's native queues) and again without it (OFFLOAD_COMPILED=0). Skipped, with
the reason, without gcc or its libtsan, or where ThreadSanitizer cannot start (some kernels'
address-space randomisation).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_PACKAGE = _ROOT / "backends" / "host" / "src" / "offload_host"
_CORE = _ROOT / "core" / "src" / "offload"
_STRESS = pathlib.Path(__file__).resolve().parent / "stress" / "queue_stress.py"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ThreadSanitizer runs on Linux here")


def _libtsan() -> str:
    compiler = shutil.which("gcc")
    if compiler is None:
        pytest.skip("gcc is not installed: cannot build the extension with -fsanitize=thread")
    path = subprocess.run([compiler, "-print-file-name=libtsan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        pytest.skip("gcc has no libtsan (install libtsan2 / the gcc sanitizer runtime)")
    return os.path.realpath(path)


@pytest.fixture(scope="module")
def tsan_package(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, str]:
    """(a folder holding offload_host built with -fsanitize=thread, libtsan's path)."""
    libtsan = _libtsan()
    root = tmp_path_factory.mktemp("tsan")
    package = root / "offload_host"
    shutil.copytree(_PACKAGE, package, ignore=shutil.ignore_patterns("*.so", "__pycache__", "build"))
    target = package / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    build = subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-g", "-fsanitize=thread", "-std=c11",
         f"-I{sysconfig.get_paths()['include']}", f"-I{package / 'include'}", f"-I{_CORE / 'include'}",
         str(package / "_native.c"), str(package / "_hostq.c"), str(package / "_hostentry.c"), str(package / "_fault.c"), str(package / "_checkmem.c"), "-o", str(target),
         "-lpthread", "-ldl"],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    core = root / "offload"
    shutil.copytree(_CORE, core, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    build = subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-g", "-fsanitize=thread", "-std=c11", f"-I{sysconfig.get_paths()['include']}",
         *sorted(str(path) for path in (core / "_compiled").glob("*.c")),  # (every source of the one extension there)
         "-o", str(core / "_compiled" / f"_fastpath{sysconfig.get_config_var('EXT_SUFFIX')}")],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    return root, libtsan


@pytest.mark.parametrize("compiled", ["1", "0"])
def test_native_queues_are_race_free_under_thread_sanitizer(tsan_package: tuple[pathlib.Path, str], compiled: str) -> None:
    root, libtsan = tsan_package
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "LD_PRELOAD": libtsan,
        "TSAN_OPTIONS": "report_signal_unsafe=0 halt_on_error=0 exitcode=66",
        "OFFLOAD_BACKENDS": "host",
        "OFFLOAD_COMPILED": compiled,
    }
    run = subprocess.run([sys.executable, str(_STRESS)], env=env, capture_output=True, text=True, timeout=600)
    if "FATAL: ThreadSanitizer" in run.stderr and "WARNING: ThreadSanitizer" not in run.stderr:
        pytest.skip(f"ThreadSanitizer cannot run here: {run.stderr.strip().splitlines()[0]}")
    assert "WARNING: ThreadSanitizer" not in run.stderr, run.stderr[-12000:]
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert "failures []" in run.stdout
    if compiled == "1":  # the compiled core ran, and its launches reached the host's native entry points
        counts = run.stdout.split("compiled launches ")[1].splitlines()[0]
        assert "'native': 0}" not in counts and "'fast'" in counts, run.stdout
    else:
        assert "compiled launches None" in run.stdout, run.stdout
