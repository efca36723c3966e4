"""Against Debian's real HIP runtime (libamdhip64-5 5.2.3 with its HSA libraries, unpacked into a
test-local folder; no AMD GPU on this machine) and with no HIP runtime at all."""

from __future__ import annotations

from pathlib import Path

PROBE = """
import offload as ol
from offload_amdgpu import AMDGPUBackend
backend = AMDGPUBackend()
try:
    devices = len(backend.init())
except ol.OffloadError as exc:
    devices = f"{exc.code.name}: {exc.details}"
ol.olInit()
status = {s.name: [s.loaded, s.device_count, s.reason, s.note] for s in ol.backend_status()}
platforms = []
ol.olIterateDevices(lambda d, _: platforms.append(d.platform.kind.name) or True)
ol.olShutDown()
raw = None
if backend.hip is not None or "hipInit" in (backend.reason or "") or "HIP 5.2" in str(devices):
    from hip import hip
    status_count = hip.hipGetDeviceCount()
    raw = {"count": [int(status_count[0]), int(status_count[1])], "init": int(hip.hipInit(0)[0]),
           "malloc": int(hip.hipMalloc(1024)[0]), "version": int(hip.hipRuntimeGetVersion()[1])}
emit({"devices": devices, "reason": backend.reason, "status": status, "platforms": platforms, "raw": raw})
"""


def test_real_runtime_of_another_release_is_refused_naming_both(real_hip: Path, hip_child) -> None:
    """HIP 5.2 is no release any hip-python of ours is generated for: olInit skips the backend,
    naming hip-python's version and the runtime's (hipRuntimeGetVersion of the real library)."""
    import importlib.metadata

    result = hip_child(PROBE, {"LD_LIBRARY_PATH": str(real_hip), "ROCM_PATH": str(real_hip / "no-rocm")})
    print(f"\nreal HIP 5.2 runtime: {result}")
    refusal = result["devices"]
    assert refusal.startswith("UNSUPPORTED: hip-python " + importlib.metadata.version("hip-python")), refusal
    assert "HIP 5.2." in refusal and "no offload-amdgpu extra pins a hip-python for HIP 5.2" in refusal, refusal
    loaded, count, reason, _ = result["status"]["amdgpu"]
    assert (loaded, count) == (False, 0) and reason.endswith(refusal.split(": ", 1)[1]), result["status"]
    assert "AMDGPU" not in result["platforms"] and "HOST" in result["platforms"]
    raw = result["raw"]  # what the runtime itself answers without a GPU (hip-python called directly)
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
