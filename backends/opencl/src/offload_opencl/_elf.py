"""The dynamic section of an ELF64 shared library (``DT_NEEDED``, ``DT_RPATH``, ``DT_RUNPATH``,
``DT_SONAME``), read from the file: how ``_locate`` learns which ICD loader PyOpenCL's extension
links to and where the dynamic linker looks for the libraries it and its loader open."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO

__all__ = ["Dynamic", "ElfError", "read_dynamic"]

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 14, 15, 29


class ElfError(Exception):
    """The file is not a little-endian ELF64 shared object this reader understands."""


@dataclass
class Dynamic:
    """What the dynamic linker reads from a library: its needed libraries, search paths and soname."""

    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    soname: str | None = None


def _read(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ElfError(f"truncated at offset {offset:#x}")
    return data


def _string(f: BinaryIO, offset: int) -> str:
    f.seek(offset)
    raw = b""
    while b"\0" not in raw:
        chunk = f.read(256)
        if not chunk:
            raise ElfError(f"unterminated string at {offset:#x}")
        raw += chunk
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


def read_dynamic(path: str) -> Dynamic:
    """The dynamic entries of the ELF64 little-endian library at ``path``; raises ``ElfError``
    (or ``OSError`` where it cannot be read)."""
    with open(path, "rb") as f:
        ident = _read(f, 0, 64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
            raise ElfError(f"{path} is not a little-endian ELF64 file")
        phoff, phentsize, phnum = struct.unpack_from("<Q", ident, 32)[0], *struct.unpack_from("<HH", ident, 54)
        loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        dynamic: tuple[int, int] | None = None
        for i in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", _read(f, phoff + i * phentsize, 48))
            if p_type == _PT_LOAD:
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == _PT_DYNAMIC:
                dynamic = (p_offset, p_filesz)
        if dynamic is None:
            raise ElfError(f"{path} has no dynamic section")
        raw = _read(f, *dynamic)
        entries = [struct.unpack_from("<qQ", raw, at) for at in range(0, len(raw) - 15, 16)]
        strtab = next((value for tag, value in entries if tag == _DT_STRTAB), None)
        if strtab is None:
            raise ElfError(f"{path} has no dynamic string table")
        base = next((off + strtab - vaddr for vaddr, off, size in loads if vaddr <= strtab < vaddr + size), None)
        if base is None:
            raise ElfError(f"{path}: the dynamic string table lies outside every loaded segment")
        found = Dynamic()
        for tag, value in entries:
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED:
                found.needed.append(_string(f, base + value))
            elif tag == _DT_SONAME:
                found.soname = _string(f, base + value)
            elif tag in (_DT_RPATH, _DT_RUNPATH):
                (found.rpath if tag == _DT_RPATH else found.runpath).extend(filter(None, _string(f, base + value).split(":")))
        return found
