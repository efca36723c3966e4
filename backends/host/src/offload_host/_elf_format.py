"""The ELF vocabulary of the host image checks (``_elf``): the constants glibc's loader acts on
and what a check learns (``ElfImage``, ``Symbol``) or refuses (``ElfProblem``). No checks here."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import lru_cache


PT_LOAD, PT_DYNAMIC, PT_NOTE, PT_PHDR, PT_TLS = 1, 2, 4, 6, 7
PT_GNU_EH_FRAME, PT_GNU_RELRO, PT_GNU_PROPERTY = 0x6474E550, 0x6474E552, 0x6474E553
PF_X, PF_W = 1, 2

DT_NULL, DT_NEEDED, DT_PLTRELSZ, DT_PLTGOT, DT_HASH, DT_STRTAB, DT_SYMTAB = 0, 1, 2, 3, 4, 5, 6
DT_RELA, DT_RELASZ, DT_RELAENT, DT_STRSZ, DT_SYMENT, DT_INIT, DT_FINI = 7, 8, 9, 10, 11, 12, 13
DT_SONAME, DT_RPATH, DT_REL, DT_RELSZ, DT_RELENT, DT_PLTREL = 14, 15, 17, 18, 19, 20
DT_TEXTREL, DT_JMPREL = 22, 23
DT_INIT_ARRAY, DT_FINI_ARRAY, DT_INIT_ARRAYSZ, DT_FINI_ARRAYSZ, DT_RUNPATH, DT_FLAGS = 25, 26, 27, 28, 29, 30
DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ = 32, 33
DT_RELRSZ, DT_RELR, DT_RELRENT = 35, 36, 37
DT_GNU_HASH = 0x6FFFFEF5
DT_CONFIG, DT_DEPAUDIT, DT_AUDIT = 0x6FFFFEFA, 0x6FFFFEFB, 0x6FFFFEFC
DT_VERSYM, DT_RELACOUNT, DT_FLAGS_1 = 0x6FFFFFF0, 0x6FFFFFF9, 0x6FFFFFFB
DT_VERDEF, DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFC, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
DT_AUXILIARY, DT_FILTER = 0x7FFFFFFD, 0x7FFFFFFF
DF_TEXTREL = 0x4
DF_1_NOOPEN, DF_1_PIE = 0x40, 0x08000000

STT_OBJECT, STT_FUNC, STT_COMMON, STT_TLS, STT_GNU_IFUNC = 1, 2, 5, 6, 10
STB_LOCAL = 0
SHN_UNDEF, SHN_ABS = 0, 0xFFF1


# Relocation types of shared objects that glibc's dl-machine.h applies, with the bytes each
# writes at r_offset (COPY and the 32-bit types are refused: linkers never emit them for a
# shared object).
EM_X86_64, EM_AARCH64 = 62, 183
RELOCATION_WIDTHS: dict[int, dict[int, int]] = {
    EM_X86_64: {
        0: 0,  # NONE
        1: 8, 6: 8, 7: 8, 8: 8,  # 64 GLOB_DAT JUMP_SLOT RELATIVE
        16: 8, 17: 8, 18: 8, 33: 8, 36: 16, 37: 8,  # DTPMOD64 DTPOFF64 TPOFF64 SIZE64 TLSDESC IRELATIVE
    },
    EM_AARCH64: {
        0: 0, 257: 8, 1025: 8, 1026: 8, 1027: 8,  # NONE ABS64 GLOB_DAT JUMP_SLOT RELATIVE
        1028: 8, 1029: 8, 1030: 8, 1031: 16, 1032: 8,  # TLS_DTPMOD TLS_DTPREL TLS_TPREL TLSDESC IRELATIVE
    },
}
# Types that only make sense against a real symbol, and those a PLT (DT_JMPREL) may hold.
NEED_SYMBOL = {EM_X86_64: {1, 6, 7, 17, 33}, EM_AARCH64: {257, 1025, 1026, 1029}}
GOT_TYPES = {EM_X86_64: {6, 7}, EM_AARCH64: {1025, 1026}}
PLT_TYPES = {EM_X86_64: {7, 36, 37}, EM_AARCH64: {1026, 1031, 1032}}
TLS_TYPES = {EM_X86_64: {16, 17, 18, 36}, EM_AARCH64: {1028, 1029, 1030, 1031}}
RELATIVE = {EM_X86_64: 8, EM_AARCH64: 1027}
ABS64 = {EM_X86_64: 1, EM_AARCH64: 257}
IRELATIVE = {EM_X86_64: 37, EM_AARCH64: 1032}


class ElfProblem(Exception):
    """What is wrong with an image, in words for an INVALID_BINARY message."""


@dataclass(frozen=True)
class Symbol:
    """A symbol the image itself defines and exports."""

    name: str
    value: int  # relative to the load base
    size: int
    type: int  # STT_*


@dataclass
class ElfImage:
    """What the checks learnt: the image's own exported definitions, and its loaded memory."""

    symbols: dict[str, Symbol] = field(default_factory=dict)
    segments: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # vaddr, memsz, offset, filesz, flags
    data: bytes = b""

    def read(self, vaddr: int, size: int) -> bytes | None:
        """``size`` bytes of the loaded image at ``vaddr`` before relocation (None if unmapped)."""
        for start, memsz, offset, filesz, _flags in self.segments:
            if start <= vaddr and vaddr + size <= start + memsz:
                rel = vaddr - start
                head = self.data[offset + rel : offset + min(filesz, rel + size)] if rel < filesz else b""
                return head + bytes(size - len(head))
        return None


@lru_cache(maxsize=1)
def host_identity() -> tuple[int, int, int]:
    """(class, data encoding, e_machine) of this process's own executable."""
    with open("/proc/self/exe", "rb") as exe:
        header = exe.read(20)
    return header[4], header[5], struct.unpack_from("<H" if header[5] == 1 else ">H", header, 18)[0]
