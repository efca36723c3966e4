"""Against Debian's real HIP runtime (libamdhip64-5 5.2.3 with its HSA libraries, unpacked into a
test-local folder; no AMD GPU on this machine) and with no HIP runtime at all."""

from __future__ import annotations

from pathlib import Path

PROBE = """
import offload as ol
from offload_amdgpu import AMDGPUBackend
backend = AMDGPUBackend()
devices = backend.init()
ol.olInit()
status = {s.name: [s.loaded, s.device_count, s.reason, s.note] for s in ol.backend_status()}
platforms = []
ol.olIterateDevices(lambda d, _: platforms.append(d.platform.kind.name) or True)
ol.olShutDown()
raw = None
if backend.hip is not None or "hipInit" in (backend.reason or ""):
    from hip import hip
    status_count = hip.hipGetDeviceCount()
    raw = {"count": [int(status_count[0]), int(status_count[1])], "init": int(hip.hipInit(0)[0]),
           "malloc": int(hip.hipMalloc(1024)[0]), "version": int(hip.hipRuntimeGetVersion()[1])}
emit({"devices": len(devices), "reason": backend.reason, "status": status, "platforms": platforms, "raw": raw})
"""


def test_real_runtime_reports_zero_devices_with_hips_error(real_hip: Path, hip_child) -> None:
    result = hip_child(PROBE, {"LD_LIBRARY_PATH": str(real_hip), "ROCM_PATH": str(real_hip / "no-rocm")})
    print(f"\nreal HIP 5.2 runtime: {result}")
    assert result["devices"] == 0
    assert result["status"]["amdgpu"][:2] == [True, 0]  # loaded, zero devices: olInit succeeded
    assert "AMDGPU" not in result["platforms"] and "HOST" in result["platforms"]
    # HIP's own error, named by the real runtime: hipInit answers hipErrorInvalidDevice (101) on
    # HIP 5.2 without a GPU (hipErrorNoDevice on other versions)
    reason = result["reason"]
    assert reason.startswith("hipInit: hipErrorInvalidDevice (101)") or "hipErrorNoDevice (100)" in reason, reason
    assert result["status"]["amdgpu"][3] == reason  # the note `offload backends` shows
    raw = result["raw"]
    assert raw["count"] == [100, 0]  # hipErrorNoDevice
    assert raw["init"] == 101 and raw["malloc"] == 101
    assert raw["version"] // 10_000_000 == 5  # HIP 5.x


def test_no_runtime_at_all(tmp_path: Path, hip_child) -> None:
    """hip-python alone: its "failed to dlopen" RuntimeError becomes zero devices and the reason."""
    result = hip_child(PROBE, {"LD_LIBRARY_PATH": str(tmp_path), "ROCM_PATH": str(tmp_path)})
    assert result["devices"] == 0 and result["raw"] is None
    assert result["status"]["amdgpu"][:2] == [True, 0]
    assert result["reason"].startswith("no HIP runtime: failed to dlopen"), result["reason"]
    assert "libamdhip64.so" in result["reason"]
    assert result["status"]["amdgpu"][3] == result["reason"]


def test_real_runtime_names_errors(real_hip: Path, hip_child) -> None:
    """The error mapping's details use the real runtime's hipGetErrorName / hipGetErrorString."""
    result = hip_child(
        """
from hip import hip
from offload_amdgpu._errors import hip_error_text, raise_hip_error
from offload import OffloadError
try:
    raise_hip_error(hip, "hipMalloc", hip.hipMalloc(64)[0])
except OffloadError as exc:
    emit([exc.code.name, exc.details, hip_error_text(hip, 100)])
""",
        {"LD_LIBRARY_PATH": str(real_hip), "ROCM_PATH": str(real_hip / "no-rocm")},
    )
    assert result[0] == "INVALID_DEVICE"
    assert result[1].startswith("hipMalloc failed: hipErrorInvalidDevice (101): ")
    assert result[2].startswith("hipErrorNoDevice (100): ")
