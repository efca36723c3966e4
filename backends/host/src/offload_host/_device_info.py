"""The host device's properties, read from this machine (/proc, /sys, sysconf)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from offload import DeviceFpCapabilityFlag as Fp
from offload import DeviceInfo, Dimensions

_U32_MAX = 0xFFFFFFFF
_PCI_VENDOR_IDS = {"AuthenticAMD": (0x1022, "AMD"), "GenuineIntel": (0x8086, "Intel")}


def _cpuinfo() -> dict[str, str]:
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor is enough
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _cache_bytes(level: int) -> int | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            if int((index / "level").read_text()) == level and (index / "type").read_text().strip() != "Instruction":
                size = (index / "size").read_text().strip()
                return int(size[:-1]) * 1024 if size.endswith("K") else int(size)
        except (OSError, ValueError):
            continue
    return None


def _clock_mhz(cpuinfo: dict[str, str]) -> int:
    khz = _read_int("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if khz:
        return khz // 1000
    return int(float(cpuinfo.get("cpu MHz", "0")))


def _memory_clock_mhz() -> int:
    """Configured speed of the first DIMM from SMBIOS type 17 (0 when the firmware hides it)."""
    for entry in sorted(Path("/sys/firmware/dmi/entries").glob("17-*")):
        try:
            raw = (entry / "raw").read_bytes()
        except OSError:
            continue
        if len(raw) >= 0x22:
            speed = struct.unpack_from("<H", raw, 0x20)[0] or struct.unpack_from("<H", raw, 0x15)[0]
            if speed:
                return speed
    return 0


def local_memory_limit() -> int:
    """Dynamic local memory one group may ask for: the per-core L2 cache (1 MiB if unknown)."""
    return _cache_bytes(2) or 1 << 20


def _processor() -> str:
    """``platform.processor()``, where /proc/cpuinfo names no model (platform costs ~2 ms to import)."""
    import platform

    return platform.processor()


def probe() -> dict[DeviceInfo, Any]:
    """Every DeviceInfo property but PLATFORM and TYPE (the core answers those)."""
    cpu = _cpuinfo()
    flags = set(cpu.get("flags", "").split())
    uname = os.uname()  # platform's machine, node, system and release on Linux (platform: imported if needed)
    model = cpu.get("model name") or _processor() or uname.machine
    vendor_id, vendor = _PCI_VENDOR_IDS.get(cpu.get("vendor_id", ""), (0, cpu.get("vendor_id", "unknown")))
    vector_bytes = 64 if "avx512f" in flags else 32 if "avx" in flags else 16
    half = "avx512_fp16" in flags
    fp = Fp.CORRECTLY_ROUNDED_DIVIDE_SQRT | Fp.ROUND_TO_NEAREST | Fp.ROUND_TO_ZERO | Fp.ROUND_TO_INF | Fp.INF_NAN | Fp.DENORM
    if "fma" in flags:
        fp |= Fp.FMA
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    machine_id = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine_id = Path(path).read_text().strip()
            break
        except OSError:
            continue
    return {
        DeviceInfo.NAME: model,
        DeviceInfo.PRODUCT_NAME: model,
        DeviceInfo.UID: f"host-{machine_id or uname.nodename}-cpu",
        DeviceInfo.VENDOR: vendor,
        DeviceInfo.DRIVER_VERSION: f"{uname.sysname} {uname.release}",
        DeviceInfo.MAX_WORK_GROUP_SIZE: _U32_MAX,
        DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: Dimensions(_U32_MAX, _U32_MAX, _U32_MAX),
        DeviceInfo.MAX_WORK_SIZE: _U32_MAX,
        DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: Dimensions(_U32_MAX, _U32_MAX, _U32_MAX),
        DeviceInfo.VENDOR_ID: vendor_id,
        DeviceInfo.NUM_COMPUTE_UNITS: len(os.sched_getaffinity(0)),
        DeviceInfo.MAX_CLOCK_FREQUENCY: _clock_mhz(cpu),
        DeviceInfo.MEMORY_CLOCK_RATE: _memory_clock_mhz(),
        DeviceInfo.ADDRESS_BITS: struct.calcsize("P") * 8,
        DeviceInfo.MAX_MEM_ALLOC_SIZE: memory,
        DeviceInfo.GLOBAL_MEM_SIZE: memory,
        DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: local_memory_limit(),
        DeviceInfo.NUM_LANES: vector_bytes // 4,
        DeviceInfo.SINGLE_FP_CONFIG: fp,
        DeviceInfo.DOUBLE_FP_CONFIG: fp,
        DeviceInfo.HALF_FP_CONFIG: fp if half else Fp(0),
        DeviceInfo.NATIVE_VECTOR_WIDTH_CHAR: vector_bytes,
        DeviceInfo.NATIVE_VECTOR_WIDTH_SHORT: vector_bytes // 2,
        DeviceInfo.NATIVE_VECTOR_WIDTH_INT: vector_bytes // 4,
        DeviceInfo.NATIVE_VECTOR_WIDTH_LONG: vector_bytes // 8,
        DeviceInfo.NATIVE_VECTOR_WIDTH_FLOAT: vector_bytes // 4,
        DeviceInfo.NATIVE_VECTOR_WIDTH_DOUBLE: vector_bytes // 8,
        DeviceInfo.NATIVE_VECTOR_WIDTH_HALF: vector_bytes // 2 if half else 0,
        DeviceInfo.SINGLE_FP_SUPPORT: True,
        DeviceInfo.DOUBLE_FP_SUPPORT: True,
        DeviceInfo.HALF_FP_SUPPORT: half,
    }
