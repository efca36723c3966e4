"""hip-python must be generated for the HIP runtime found: ``olInit`` compares the two (hip-python's
version against ``hipRuntimeGetVersion``) before hip-python's C API is touched, and skips the
backend with both versions named on a mismatch. The simulated runtime reports the version
``GPUSIM_HIP_VERSION`` tells it, so both ways run here, each in a child process."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import child_environ

from offload import ErrorCode
from offload_amdgpu import _versions
from offload_amdgpu._versions import Bindings, HipVersionMismatch

LISTING = """
import json, sys
import offload as ol
ol.olInit()
status = {s.name: [s.loaded, s.device_count, s.reason] for s in ol.backend_status()}
kinds = []
ol.olIterateDevices(lambda d, _: kinds.append(d.platform.kind.name) or True)
ol.olShutDown()
emit({"status": status, "kinds": kinds, "hip_imported": "hip" in sys.modules or "rocm.bindings.hip" in sys.modules,
      "native_imported": "offload_amdgpu._native" in sys.modules})
"""


def _told(hip: tuple[int, int], patch: int = 26333) -> str:
    return f"{hip[0]}.{hip[1]}.{patch}"


def test_the_simulator_reports_the_version_it_is_told(hip_runtime: Path, hip_child: Callable[..., Any]) -> None:
    code = "from hip import hip\nemit([int(v) for v in (hip.hipRuntimeGetVersion()[1], hip.hipDriverGetVersion()[1])])"
    assert hip_child(code, {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_HIP_VERSION": "6.4.43483"}) == [60443483] * 2
    assert hip_child(code, {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_HIP_VERSION": "5.2.21153"}) == [50221153] * 2
    # unset, or not MAJOR.MINOR.PATCH: the default, HIP 7.15.26333 (ROCm 10.0's)
    assert hip_child(code, {"LD_LIBRARY_PATH": str(hip_runtime)}) == [71526333] * 2
    assert hip_child(code, {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_HIP_VERSION": "7.x"}) == [71526333] * 2


def test_the_simulators_default_is_the_hip_of_the_pinned_hip_python(hip_runtime: Path, hip_child: Callable[..., Any]) -> None:
    """tests/requirements.txt pins hip-python; the simulator's default HIP must be the one it targets
    (else every AMDGPU test would meet a mismatch): bump both together."""
    value = hip_child("from hip import hip\nemit(int(hip.hipRuntimeGetVersion()[1]))", {"LD_LIBRARY_PATH": str(hip_runtime)})
    assert (value // 10_000_000, value // 100_000 % 100) == _versions.bindings().hip, (value, _versions.bindings())


def test_matching_versions_load_the_backend(hip_runtime: Path, hip_child: Callable[..., Any]) -> None:
    told = _told(_versions.bindings().hip)
    result = hip_child(LISTING, {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_HIP_VERSION": told})
    assert result["status"]["amdgpu"] == [True, 1, None], result
    assert "AMDGPU" in result["kinds"] and result["hip_imported"]


def test_a_mismatch_skips_the_backend_naming_both_versions(hip_runtime: Path, hip_child: Callable[..., Any]) -> None:
    installed = importlib.metadata.version("hip-python")
    result = hip_child(LISTING, {"LD_LIBRARY_PATH": str(hip_runtime), "GPUSIM_HIP_VERSION": "6.4.43483"})
    loaded, count, reason = result["status"]["amdgpu"]
    assert (loaded, count) == (False, 0), result
    assert f"hip-python {installed}" in reason and "HIP 6.4.43483" in reason and "libamdhip64.so" in reason, reason
    assert "offload-amdgpu[rocm6-4]" in reason, reason
    # olInit succeeded with the other backends (the host's; OpenCL's too where offload-opencl and a PoCL are installed)
    assert "HOST" in result["kinds"] and "AMDGPU" not in result["kinds"], result["kinds"]
    assert not result["hip_imported"] and not result["native_imported"]  # hip-python's C API never reached


def test_offload_backends_shows_the_mismatch(hip_runtime: Path) -> None:
    env = child_environ(("OFFLOAD_", "GPUSIM_"))
    env.update(LD_LIBRARY_PATH=str(hip_runtime), ROCM_PATH=str(hip_runtime / "no-rocm"), GPUSIM_HIP_VERSION="7.2.99")
    proc = subprocess.run([sys.executable, "-m", "offload", "backends", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = [b for b in json.loads(proc.stdout)["backends"] if b["name"] == "amdgpu"]
    assert not row["loaded"] and "HIP 7.2.99" in row["reason"] and "offload-amdgpu[rocm7-2]" in row["reason"], row
    text = subprocess.run([sys.executable, "-m", "offload", "backends"], capture_output=True, text=True, env=env, timeout=120)
    assert re.search(r"^amdgpu: skipped: OL_ERRC_UNSUPPORTED: hip-python \S+ is generated for HIP 7\.15 .*HIP 7\.2\.99", text.stdout, re.M), text.stdout


def test_the_mapping_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines up to 7.x: hip-python's major.minor is the ROCm release and its HIP; 10.x states its HIP."""
    monkeypatch.setattr(_versions, "_hip_of_rocm_version", lambda: None)
    for version, hip in (("6.4.2.555.40", (6, 4)), ("7.2.2.562.43", (7, 2)), ("7.0.0.555.40", (7, 0))):
        monkeypatch.setattr(importlib.metadata, "version", lambda name, v=version: v)
        assert _versions.bindings() == Bindings(version, hip, "its ROCm release")
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "dev")
    with pytest.raises(HipVersionMismatch, match="cannot tell which HIP release hip-python dev"):
        _versions.bindings()


def test_check_match_compares_major_and_minor() -> None:
    ours = Bindings("7.2.2.562.43", (7, 2), "its ROCm release")
    _versions.check_match(ours, 70251234, "libamdhip64.so")  # 7.2.51234: another build of 7.2
    with pytest.raises(HipVersionMismatch) as caught:
        _versions.check_match(ours, 50221153, "/opt/rocm/lib/libamdhip64.so")
    assert caught.value.code is ErrorCode.UNSUPPORTED
    assert "hip-python 7.2.2.562.43 is generated for HIP 7.2" in str(caught.value)
    assert "/opt/rocm/lib/libamdhip64.so is HIP 5.2.21153" in str(caught.value)
    assert "no offload-amdgpu extra pins a hip-python for HIP 5.2" in str(caught.value)


def test_every_extra_pins_the_line_the_check_names() -> None:
    """The extras of offload-amdgpu's metadata are those the mismatch message advises, each pinning
    hip-python to one ROCm line (major.minor)."""
    metadata = importlib.metadata.metadata("offload-amdgpu")
    assert sorted(metadata.get_all("Provides-Extra") or []) == sorted(_versions.EXTRAS.values())
    for extra in _versions.EXTRAS.values():
        pins = [r for r in metadata.get_all("Requires-Dist") or [] if f'extra == "{extra}"' in r]
        line = extra.removeprefix("rocm").replace("-", ".")
        major, minor = line.split(".")
        assert len(pins) == 1 and f">={line}" in pins[0] and f"<{major}.{int(minor) + 1}" in pins[0], (extra, pins)
