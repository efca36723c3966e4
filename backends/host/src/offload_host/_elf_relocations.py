"""The relocation tables of a host image, for ``_elf``'s checks: every RELA, PLT and RELR
relocation has a type this machine's loader applies, names a symbol it may, writes initialised
bytes of a writable segment once (never the dynamic section nor DT_PLTGOT's reserved words), and
stores a pointer into the image; the PLT's slots lie in its GOT."""

from __future__ import annotations

import struct
from typing import Any

from ._elf_format import (
    ABS64, DT_JMPREL, DT_PLTGOT, DT_PLTRELSZ, DT_RELA, DT_RELASZ, DT_RELR, DT_RELRSZ, ElfProblem, GOT_TYPES,
    IRELATIVE, NEED_SYMBOL, PLT_TYPES, RELATIVE, RELOCATION_WIDTHS, SHN_ABS, SHN_UNDEF, STB_LOCAL, STT_TLS,
    TLS_TYPES,
)


def check_relocations(c: Any) -> dict[int, tuple[int, int, int]]:
    """Check the RELA, PLT and RELR relocations of the image ``c`` (``_elf``'s checker, whose
    ``writable``, ``pointer`` and ``code_address`` judge each target and value); return
    ``c.relocated``: target -> (type, symbol, addend), (-1, 0, 0) for RELR's."""
    types = RELOCATION_WIDTHS.get(c.machine)
    relocated: dict[int, tuple[int, int, int]] = {}  # target -> (type, symbol, addend)
    c.relocated = relocated  # RELR's targets join it (_relr_target)
    plt_slots: list[tuple[int, int]] = []
    written: set[int] = set()  # 8-byte words written by RELA relocations
    got_entries: set[tuple[int, int]] = set()  # (GLOB_DAT or JUMP_SLOT, symbol)
    for table, size_tag, what in ((DT_RELA, DT_RELASZ, "DT_RELA"), (DT_JMPREL, DT_PLTRELSZ, "DT_JMPREL")):
        if table not in c.dyn:
            continue
        size = c.dyn[size_tag]
        _table_size(c, table, size, what)
        if size % 24:
            raise ElfProblem(f"{what} size is not a whole number of entries")
        raw = c.mem(c.dyn[table], size, what)
        for r_offset, r_info, addend in struct.iter_unpack("<QQq", raw):
            r_type, r_sym = r_info & 0xFFFFFFFF, r_info >> 32
            if r_sym >= c.nsyms:
                raise ElfProblem(f"a relocation names symbol {r_sym}, past the {c.nsyms} symbols")
            if types is not None:
                if r_type not in types:
                    raise ElfProblem(f"relocation type {r_type} is not supported on this machine")
                width = types[r_type]
                if table == DT_JMPREL and r_type not in PLT_TYPES[c.machine]:
                    raise ElfProblem(f"relocation type {r_type} does not belong in the PLT relocations")
                if r_sym and r_type in (RELATIVE[c.machine], IRELATIVE[c.machine]):
                    raise ElfProblem(f"a relocation of type {r_type} names a symbol")
                if r_sym == 0 and r_type in NEED_SYMBOL[c.machine]:
                    raise ElfProblem(f"a relocation of type {r_type} names no symbol")
                if r_type in GOT_TYPES[c.machine]:
                    if addend:
                        raise ElfProblem("a GOT or PLT relocation has an addend")
                    if (r_type, r_sym) in got_entries:  # linkers make one GOT entry / PLT slot per symbol
                        raise ElfProblem(f"symbol {r_sym} has two relocations of type {r_type}")
                    got_entries.add((r_type, r_sym))
                if r_sym:
                    _n, info, other, shndx, _v, _s = c.syms[r_sym]
                    if info >> 4 == STB_LOCAL:
                        raise ElfProblem(f"a relocation names local symbol {r_sym} (linkers use RELATIVE)")
                    if (r_type in TLS_TYPES[c.machine]) != (info & 0xF == STT_TLS):
                        raise ElfProblem(f"relocation type {r_type} does not fit the kind of symbol {r_sym}")
                    if shndx == SHN_UNDEF and (info >> 4 not in (1, 2, 10) or other & 3):
                        raise ElfProblem(f"a relocation names undefined symbol {r_sym}, which is not global with default visibility")
                if r_type == IRELATIVE.get(c.machine):
                    c.code_address(addend, "an IRELATIVE resolver")
                elif r_type == RELATIVE.get(c.machine):
                    c.pointer(addend, "a RELATIVE relocation")
                elif r_type == ABS64.get(c.machine) and r_sym and c.syms[r_sym][3] not in (SHN_UNDEF, SHN_ABS):
                    c.pointer(c.syms[r_sym][4] + addend, "an absolute relocation")
            else:
                width = 8
            if width:
                c.writable(r_offset, width, f"the target of a {what} relocation")
                if r_offset % 8:
                    raise ElfProblem(f"the target of a {what} relocation at {r_offset:#x} is misaligned")
                words = range(r_offset, r_offset + width, 8)
                if any(word in written for word in words):
                    raise ElfProblem(f"two relocations write the bytes at {r_offset:#x}")
                if DT_PLTGOT in c.dyn and any(c.dyn[DT_PLTGOT] <= w < c.dyn[DT_PLTGOT] + 24 for w in words):
                    raise ElfProblem(f"a relocation writes the reserved words of DT_PLTGOT at {r_offset:#x}")
                written.update(words)
            c.relocated[r_offset] = (r_type, r_sym, addend)
            if table == DT_JMPREL:
                plt_slots.append((r_offset, width))
    if plt_slots and DT_PLTGOT in c.dyn and types is not None:
        # The PLT's GOT: three reserved words, then the slots of the PLT relocations, each
        # written by exactly one of them, inside the GOT's section when the image kept it.
        first = c.dyn[DT_PLTGOT] + 24
        end = first + sum(width for _, width in plt_slots)
        got_size = c.progbits.get(c.dyn[DT_PLTGOT])
        if got_size is not None and end - first + 24 > got_size:
            raise ElfProblem(f"the PLT relocations need {end - first} bytes of the PLT's GOT, which has {got_size - 24}")
        if any(not first <= at < end for at, _ in plt_slots):
            raise ElfProblem("a PLT relocation writes outside the PLT's slots of DT_PLTGOT")
    c.relr_done = set()
    if DT_RELR in c.dyn:
        size = c.dyn[DT_RELRSZ]
        _table_size(c, DT_RELR, size, "DT_RELR")
        if size % 8:
            raise ElfProblem("DT_RELRSZ is not a whole number of entries")
        where: int | None = None
        for (entry,) in struct.iter_unpack("<Q", c.mem(c.dyn[DT_RELR], size, "DT_RELR")):
            if entry & 1 == 0:
                _relr_target(c, entry)
                where = entry + 8
            else:
                if where is None:
                    raise ElfProblem("a RELR bitmap comes before any RELR address")
                bits, index = entry >> 1, 0
                while bits:
                    if bits & 1:
                        _relr_target(c, where + 8 * index)
                    bits >>= 1
                    index += 1
                where += 63 * 8

    return relocated


def _table_size(c: Any, table: int, size: int, what: str) -> None:
    """A relocation table the dynamic section names is not empty and, when the image kept its
    section headers, starts at a relocation section and covers all of it: linkers write
    nothing else."""
    if not size:
        raise ElfProblem(f"{what} is named but empty")
    if not c.relocation_sections:
        return
    section = c.relocation_sections.get(c.dyn[table])
    if section is None:
        raise ElfProblem(f"{what} does not start at a relocation section")
    if size < section:
        raise ElfProblem(f"{what} covers {size} bytes of its {section}-byte section")


def _relr_target(c: Any, vaddr: int) -> None:
    """A RELR relocation adds the base to the pointer stored at ``vaddr`` (once)."""
    c.writable(vaddr, 8, "the target of a RELR relocation")
    if vaddr in c.relr_done:
        raise ElfProblem(f"RELR relocates {vaddr:#x} twice")
    c.relr_done.add(vaddr)
    (stored,) = struct.unpack("<Q", c.mem(vaddr, 8, "a RELR target"))
    c.pointer(stored, "a RELR relocation")
    c.relocated.setdefault(vaddr, (-1, 0, 0))
