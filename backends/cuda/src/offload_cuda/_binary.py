"""Recognising CUDA images without loading them: cubin (ELF, EM_CUDA), fatbin and PTX text.

``problem(data, device_sm)`` is None for an image the device can load, else why not. The
architecture rule is upstream liboffload's (and the driver's): a cubin for sm_XY runs on a
device of the same major whose minor is at least Y; PTX runs on a device at least as new as its
``.target`` (an arch-specific ``sm_XYa`` target only on exactly sm_XY, a family-specific
``sm_XYf`` on the same major with a minor at least Y) and a PTX ISA ``.version`` the driver's JIT
knows (CUDA 12.0 reads ISA 8.0 ... CUDA 13.0 reads 9.0; a newer ISA is
``CUDA_ERROR_UNSUPPORTED_PTX_VERSION`` at load); a fatbin is loadable when one of its entries is.
"""

from __future__ import annotations

import re
import struct

__all__ = ["EM_CUDA", "FATBIN_MAGIC", "cubin_sm", "elf_extent", "image_format", "problem"]

EM_CUDA = 190
FATBIN_MAGIC = 0xBA55ED50
_PTX_TARGET = re.compile(rb"^\s*\.target\s+sm_(\d+)([af]?)\b", re.M)

#: The newest PTX ISA each CUDA driver version's JIT compiles (the PTX ISA release notes).
_PTX_ISA_OF_DRIVER = {
    12000: (8, 0), 12010: (8, 1), 12020: (8, 2), 12030: (8, 3), 12040: (8, 4), 12050: (8, 5),
    12060: (8, 5), 12080: (8, 7), 12090: (8, 8), 13000: (9, 0),
}  # fmt: skip


def newest_ptx_isa(driver_version: int) -> tuple[int, int] | None:
    """The newest PTX ISA a driver of ``driver_version`` (``cuDriverGetVersion``) reads; None when
    the driver is newer than this table (it then decides at load)."""
    known = [v for v in _PTX_ISA_OF_DRIVER if v <= driver_version]
    if not known or driver_version > max(_PTX_ISA_OF_DRIVER):
        return None
    return _PTX_ISA_OF_DRIVER[max(known)]
_PTX_VERSION = re.compile(rb"^\s*\.version\s+(\d+)\.(\d+)", re.M)


def image_format(data: bytes) -> str | None:
    """``"cubin"``, ``"fatbin"``, ``"ptx"`` or None."""
    if data[:4] == b"\x7fELF":
        return "cubin" if len(data) >= 64 and struct.unpack_from("<H", data, 18)[0] == EM_CUDA else None
    if len(data) >= 16 and struct.unpack_from("<I", data, 0)[0] == FATBIN_MAGIC:
        return "fatbin"
    text = data.rstrip(b"\0")
    if b"\0" not in text and _PTX_VERSION.search(text) and _PTX_TARGET.search(text):
        try:
            text.decode("ascii")
        except UnicodeDecodeError:
            return None
        return "ptx"
    return None


def elf_extent(data: bytes) -> int | None:
    """The bytes an ELF image's headers cover (what the driver will read), None if malformed."""
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        return None
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
    end = 64
    if shnum:
        if shentsize != 64:
            return None
        end = max(end, shoff + shnum * 64)
    if phnum:
        end = max(end, phoff + phnum * phentsize)
    if end > len(data):
        return None
    for i in range(shnum):
        (sh_type,) = struct.unpack_from("<I", data, shoff + i * 64 + 4)
        offset, size = struct.unpack_from("<QQ", data, shoff + i * 64 + 24)
        if sh_type != 8:  # NOBITS
            end = max(end, offset + size)
    return end if end <= len(data) else None


def cubin_sm(data: bytes) -> int:
    """The SM number of a cubin (CUDA 13's ELF ABI 8 keeps it in bits 8-15 of e_flags)."""
    (flags,) = struct.unpack_from("<I", data, 48)
    return (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF


def _sm_ok(image_sm: int, device_sm: int) -> bool:
    return image_sm // 10 == device_sm // 10 and image_sm % 10 <= device_sm % 10


def _ptx_problem(text: bytes, device_sm: int, driver_version: int | None) -> str | None:
    target = _PTX_TARGET.search(text)
    if target is None:
        return "PTX without a .target"
    sm, suffix = int(target.group(1)), target.group(2).decode()
    name = f"sm_{sm}{suffix}"
    if suffix == "a" and sm != device_sm:
        return f"PTX for the arch-specific {name} runs only on an sm_{sm} device, not this sm_{device_sm} one"
    if suffix == "f" and not _sm_ok(sm, device_sm):
        return f"PTX for the family-specific {name} cannot run on this sm_{device_sm} device"
    if sm > device_sm:
        return f"PTX for {name} cannot run on this sm_{device_sm} device"
    version = _PTX_VERSION.search(text)
    newest = None if driver_version is None else newest_ptx_isa(driver_version)
    if version is not None and newest is not None:
        isa = (int(version.group(1)), int(version.group(2)))
        if isa > newest:
            return (
                f"PTX ISA {isa[0]}.{isa[1]} is newer than the {newest[0]}.{newest[1]} this driver "
                f"({driver_version // 1000}.{driver_version % 1000 // 10}) compiles"
            )
    return None


def problem(data: bytes, device_sm: int, driver_version: int | None = None) -> str | None:
    """None when ``data`` is an image this device can load, else a description of why not
    (``driver_version`` as ``cuDriverGetVersion`` gives it; None skips the PTX ISA check)."""
    fmt = image_format(data)
    if fmt is None:
        return "not a CUDA image (cubin, fatbin or PTX)"
    if fmt == "cubin":
        if elf_extent(data) is None:
            return "a malformed cubin (headers or sections outside the data)"
        sm = cubin_sm(data)
        return None if _sm_ok(sm, device_sm) else f"a cubin for sm_{sm} cannot run on this sm_{device_sm} device"
    if fmt == "ptx":
        return _ptx_problem(data.rstrip(b"\0"), device_sm, driver_version)
    (header,) = struct.unpack_from("<H", data, 6)
    (total,) = struct.unpack_from("<Q", data, 8)
    if header + total > len(data):
        return "a truncated fatbin"
    seen: list[str] = []
    at = header
    while at + 32 <= header + total:
        kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, at)
        (arch,) = struct.unpack_from("<I", data, at + 28)
        payload = data[at + entry_header : at + entry_header + size]
        if entry_header < 32 or len(payload) != size:
            return "a malformed fatbin entry"
        if kind == 2:
            # a compressed entry (nvcc's default) is judged by the architecture in its header
            sm = cubin_sm(payload) if payload[:4] == b"\x7fELF" and len(payload) >= 64 else arch
            if _sm_ok(sm, device_sm):
                return None
            seen.append(f"sm_{sm} cubin")
        elif kind == 1:
            text = payload.split(b"\0", 1)[0]
            if _PTX_VERSION.search(text) is None:  # compressed
                if arch <= device_sm:
                    return None
            elif _ptx_problem(text, device_sm, driver_version) is None:
                return None
            seen.append(f"sm_{arch} PTX")
        at += entry_header + size
    return f"a fatbin with no entry for this sm_{device_sm} device ({', '.join(seen) or 'no usable entries'})"
