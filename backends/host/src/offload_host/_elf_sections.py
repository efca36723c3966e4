"""Section-header facts of a host image, for ``_elf``'s checks: the loader never reads the section
headers, so anything odd there only means "unknown"; what is there must agree with the segments."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ._elf_format import SHN_UNDEF, STB_LOCAL, STT_FUNC, STT_GNU_IFUNC, ElfProblem


@dataclass
class SectionFacts:
    """What the section headers say (``None`` where the image did not keep them or they are odd)."""

    starts: set[int] | None = None  # addresses of the functions of the full symbol table (.symtab)
    sections: list[tuple[int, int]] | None = None  # (address, size) per section index
    recorded: dict[bytes, set[tuple[int, int, int]]] | None = None  # global name -> {(value, size, type)}
    progbits: dict[int, int] = field(default_factory=dict)  # address -> size of writable data sections
    relocation_sections: dict[int, int] = field(default_factory=dict)  # address -> size of RELA/RELR sections


def read_sections(data: bytes, segments: list[tuple[int, int, int, int, int]]) -> SectionFacts:
    """Where the sections are, the function starts and global definitions of .symtab; raise
    ``ElfProblem`` when an allocated section is not where the loaded ``segments`` map it."""
    facts = SectionFacts()
    try:
        e_shoff = struct.unpack_from("<Q", data, 40)[0]
        e_shentsize, e_shnum = struct.unpack_from("<HH", data, 58)
        if e_shentsize != 64 or not e_shnum or e_shoff + 64 * e_shnum > len(data):
            return facts
        headers = [struct.unpack_from("<4xIQQQQI4x8xQ", data, e_shoff + 64 * i) for i in range(e_shnum)]
        facts.sections = [(addr, size) for _t, _f, addr, _o, size, _l, _e in headers]
        for sh_type, flags, addr, offset, size, _link, _e in headers:
            # Allocated sections must be where the segments map them (else the segments map
            # other bytes than the code and data the symbols describe).
            if flags & 2 and sh_type != 8 and size:  # SHF_ALLOC, not SHT_NOBITS
                mapped = False
                for vaddr, memsz, seg_offset, filesz, _fl in segments:
                    if vaddr <= addr < vaddr + memsz:
                        if addr + size > vaddr + filesz or offset - seg_offset != addr - vaddr:
                            raise ElfProblem(f"the section at {addr:#x} is not where its segment maps it")
                        mapped = True
                if not mapped:
                    raise ElfProblem(f"the section at {addr:#x} is in no loadable segment")
            if sh_type == 1 and flags & 3 == 3:  # a writable SHT_PROGBITS: maybe the PLT's GOT
                facts.progbits[addr] = size
            if sh_type in (4, 19):  # SHT_RELA, SHT_RELR
                facts.relocation_sections[addr] = size
        for sh_type, _flags, _addr, offset, size, link, entsize in headers:
            if sh_type != 2:  # SHT_SYMTAB
                continue
            if entsize != 24 or offset + size > len(data) or link >= len(headers):
                return facts
            names_at, names_size = headers[link][3], headers[link][4]
            names = data[names_at : names_at + names_size]
            starts: set[int] = set()
            recorded: dict[bytes, set[tuple[int, int, int]]] = {}
            for st_name, info, _o, shndx, value, sym_size in struct.iter_unpack("<IBBHQQ", data[offset : offset + size - size % 24]):
                if shndx == SHN_UNDEF:
                    continue
                if info & 0xF in (STT_FUNC, STT_GNU_IFUNC):
                    starts.add(value)
                if info >> 4 != STB_LOCAL:
                    end = names.find(b"\0", st_name)
                    name = names[st_name:end].split(b"@", 1)[0] if 0 <= st_name < end else b""
                    recorded.setdefault(name, set()).add((value, sym_size, info & 0xF))
            facts.starts, facts.recorded = starts, recorded
            return facts
    except struct.error:
        return facts
    return facts
