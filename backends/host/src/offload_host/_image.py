"""Program images of the host device: ELF shared objects for this machine, each loaded with
dlopen from a private temporary copy (unique per program, removed at unload), so two programs
never share a handle even when their bytes or names are equal."""

from __future__ import annotations

import os
import struct
import tempfile
from functools import lru_cache

from offload import ErrorCode, OffloadError

from . import _native

_ELF_MAGIC = b"\x7fELF"
_ET_DYN = 3
_PT_LOAD, _PT_DYNAMIC = 1, 2
_KIND_FUNCTION, _KIND_OBJECT = 0, 1


@lru_cache(maxsize=1)
def _host_elf_identity() -> tuple[int, int, int]:
    """(class, data encoding, e_machine) of this process's own executable."""
    with open("/proc/self/exe", "rb") as exe:
        header = exe.read(20)
    return header[4], header[5], struct.unpack_from("<H" if header[5] == 1 else ">H", header, 18)[0]


def elf_problem(data: bytes) -> str | None:
    """Why ``data`` is not a shared object for this machine (None when it is one)."""
    if len(data) < 64 or not data.startswith(_ELF_MAGIC):
        return "not an ELF image"
    elf_class, encoding, machine = _host_elf_identity()
    if data[4] != elf_class or data[5] != encoding:
        return "ELF class or byte order differs from this machine's"
    order = "<" if encoding == 1 else ">"
    e_type, e_machine = struct.unpack_from(order + "HH", data, 16)
    if e_type != _ET_DYN:
        return f"ELF type {e_type} is not a shared object (ET_DYN)"
    if e_machine != machine:
        return f"ELF machine {e_machine} is not this machine's ({machine})"
    return _layout_problem(data, order)


def _layout_problem(data: bytes, order: str) -> str | None:
    """Whether every table and loadable segment lies inside ``data`` (dlopen of a truncated or
    corrupt object can fault the whole process, so it must never see one)."""
    if data[4] != 2:
        return "only 64-bit ELF objects are supported"
    e_phoff, e_shoff = struct.unpack_from(order + "QQ", data, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from(order + "HHHH", data, 54)
    size = len(data)
    if e_phnum == 0 or e_phentsize < 56 or e_phoff + e_phnum * e_phentsize > size:
        return "program header table missing or outside the image"
    if e_shnum and (e_shentsize < 64 or e_shoff + e_shnum * e_shentsize > size):
        return "section header table outside the image (truncated?)"
    dynamic = False
    for i in range(e_phnum):
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack_from(order + "IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type in (_PT_LOAD, _PT_DYNAMIC) and p_offset + p_filesz > size:
            return "a loadable segment lies outside the image (truncated?)"
        dynamic |= p_type == _PT_DYNAMIC
    if not dynamic:
        return "no dynamic segment: not a shared object"
    return None


class HostImage:
    """One dlopen'd program. ``unload`` runs its destructors (dlclose) and removes the copy."""

    __slots__ = ("handle", "path")

    def __init__(self, data: bytes) -> None:
        problem = elf_problem(data)
        if problem is not None:
            raise OffloadError(ErrorCode.INVALID_BINARY, f"invalid host binary: {problem}")
        fd, self.path = tempfile.mkstemp(prefix="offload-host-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as copy:
                copy.write(data)
        except OSError as exc:
            os.unlink(self.path)
            raise OffloadError(ErrorCode.HOST_IO, f"failed to write target image to tmpfile {self.path}: {exc}") from exc
        try:
            self.handle = _native.dl_open(self.path)  # global constructors run here
        except OSError as exc:
            os.unlink(self.path)
            raise OffloadError(ErrorCode.INVALID_BINARY, f"failed to load target image: {exc}") from exc

    def kernel(self, name: str) -> int:
        found = _native.dl_symbol(self.handle, name)
        if found is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"kernel '{name}' not found in the program")
        address, _size, kind = found
        if kind != _KIND_FUNCTION:
            raise OffloadError(ErrorCode.NOT_FOUND, f"'{name}' is not a kernel (it is a data symbol)")
        return address

    def global_variable(self, name: str) -> tuple[int, int]:
        found = _native.dl_symbol(self.handle, name)
        if found is None:
            raise OffloadError(ErrorCode.NOT_FOUND, f"failed to load global '{name}'")
        address, size, kind = found
        if kind != _KIND_OBJECT:
            raise OffloadError(ErrorCode.NOT_FOUND, f"'{name}' is not a global variable (it is a function)")
        return address, size

    def unload(self) -> None:
        try:
            _native.dl_close(self.handle)  # global destructors run here
        except OSError as exc:
            raise OffloadError(ErrorCode.UNKNOWN, f"failed to unload {self.path}: {exc}") from exc
        finally:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
