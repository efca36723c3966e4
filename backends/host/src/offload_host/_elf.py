"""Static checks of host program images: everything glibc's dynamic loader dereferences.

``inspect(data)`` parses a 64-bit ELF shared object the way ``dlopen`` reads it (program
headers, the dynamic section, string and symbol tables, both hash tables, RELA/RELR
relocations, symbol versions, constructor and destructor tables) and raises ``ElfProblem``
naming the first thing that is out of range, inconsistent, or would make the loader read or
write outside the object's own mapped memory. It never loads or runs anything.

What it proves: every table the loader walks lies inside the object's loaded segments, every
index into a table is in range, every chain terminates, every relocation writes initialised
bytes of a writable segment of the object (never the dynamic section, never twice), every
pointer it stores points into the object, every function the loader calls (constructors,
destructors, IFUNC resolvers) is the start of a function of the object, and, when the image
keeps its section headers, that its segments map its sections where the symbols say they are.
It refuses, beyond what glibc refuses: REL relocations, filters and audit libraries, preinit
arrays, unaligned or 32-bit relocations, and PIE executables (as dlopen does).

What it cannot prove is that the object's own code (IFUNC resolvers, constructors) behaves, or
that its relocations compute the values the program means; ``_image`` adds a trial load in a
child process for the loader's remaining verdicts (missing libraries, undefined symbols).

Helpers: ``_elf_format`` (constants and result types), ``_elf_sections`` (section-header facts),
``_elf_tables`` (hash and version tables), ``_elf_relocations`` (the relocation tables).
"""

from __future__ import annotations

import struct

from ._elf_format import (
    ABS64, DF_1_NOOPEN, DF_1_PIE, DF_TEXTREL, DT_AUDIT, DT_AUXILIARY, DT_CONFIG, DT_DEPAUDIT, DT_FILTER,
    DT_FINI, DT_FINI_ARRAY, DT_FINI_ARRAYSZ, DT_FLAGS, DT_FLAGS_1, DT_INIT, DT_INIT_ARRAY, DT_INIT_ARRAYSZ,
    DT_JMPREL, DT_NEEDED, DT_NULL, DT_PLTGOT, DT_PLTREL, DT_PLTRELSZ, DT_PREINIT_ARRAY, DT_REL, DT_RELA,
    DT_RELAENT, DT_RELASZ, DT_RELENT, DT_RELR, DT_RELRENT, DT_RELRSZ, DT_RELSZ, DT_RPATH, DT_RUNPATH, DT_SONAME,
    DT_STRSZ, DT_STRTAB, DT_SYMENT, DT_SYMTAB, DT_TEXTREL, DT_VERDEF, DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM,
    ElfImage, ElfProblem, PF_W, PF_X, PT_DYNAMIC, PT_GNU_EH_FRAME, PT_GNU_PROPERTY, PT_GNU_RELRO, PT_LOAD,
    PT_NOTE, PT_PHDR, PT_TLS, RELATIVE, SHN_ABS, SHN_UNDEF, STB_LOCAL, STT_COMMON, STT_FUNC, STT_GNU_IFUNC,
    STT_OBJECT, Symbol, host_identity,
)
from ._elf_relocations import check_relocations
from ._elf_sections import read_sections
from ._elf_tables import check_versions, symbol_count

__all__ = ["ElfImage", "ElfProblem", "Symbol", "inspect"]

_STRING_TAGS = (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_AUXILIARY, DT_FILTER, DT_CONFIG, DT_DEPAUDIT, DT_AUDIT)
_MAX_TLS = 1 << 30  # a larger TLS block cannot be allocated per thread anyway
_MAX_NOTE = 1 << 16  # glibc reads PT_NOTE onto the stack (alloca)


def inspect(data: bytes) -> ElfImage:
    """Check ``data`` as a shared object for this machine; raise ``ElfProblem`` when it is not
    one that the dynamic loader can map and relocate without touching memory outside it."""
    try:
        return _Checker(data).run()
    except (struct.error, IndexError, OverflowError, MemoryError) as exc:  # a table cut short
        raise ElfProblem(f"malformed tables ({exc})") from None


class _Checker:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.image = ElfImage(data=data)

    # --- helpers ---------------------------------------------------------------------------

    def segment_of(self, vaddr: int, size: int, what: str) -> tuple[int, int, int, int, int]:
        if size < 0 or vaddr < 0:
            raise ElfProblem(f"{what} has a negative extent")
        for seg in self.image.segments:
            if seg[0] <= vaddr and vaddr + size <= seg[0] + seg[1]:
                return seg
        raise ElfProblem(f"{what} [{vaddr:#x}, {vaddr + size:#x}) lies outside the loaded segments")

    def mem(self, vaddr: int, size: int, what: str) -> bytes:
        if size > len(self.data):
            raise ElfProblem(f"{what} ({size} bytes) is larger than the whole image")
        self.segment_of(vaddr, size, what)
        got = self.image.read(vaddr, size)
        assert got is not None
        return got

    def string(self, offset: int, what: str) -> bytes:
        if offset >= self.strsz:
            raise ElfProblem(f"{what}: string offset {offset:#x} is past the string table ({self.strsz:#x} bytes)")
        end = self.strtab.find(b"\0", offset)
        if end < 0:
            raise ElfProblem(f"{what}: string at {offset:#x} is not terminated inside the string table")
        return self.strtab[offset:end]

    # --- the checks, in the order the loader meets them ----------------------------------------

    def run(self) -> ElfImage:
        self.header()
        self.program_headers()
        self.dynamic()
        self.strings()
        self.function_starts()
        self.hash_tables()
        self.symbol_table()
        self.versions()
        self.relocations()
        self.constructors()
        return self.image

    def header(self) -> None:
        data = self.data
        if len(data) < 64 or not data.startswith(b"\x7fELF"):
            raise ElfProblem("not an ELF image")
        elf_class, encoding, machine = host_identity()
        if data[4] != elf_class or data[5] != encoding:
            raise ElfProblem("ELF class or byte order differs from this machine's")
        if data[4] != 2 or data[5] != 1:
            raise ElfProblem("only 64-bit little-endian ELF objects are supported")
        e_type, e_machine = struct.unpack_from("<HH", data, 16)
        if e_type != 3:
            raise ElfProblem(f"ELF type {e_type} is not a shared object (ET_DYN)")
        if e_machine != machine:
            raise ElfProblem(f"ELF machine {e_machine} is not this machine's ({machine})")
        self.machine = machine
        self.e_phoff = struct.unpack_from("<Q", data, 32)[0]
        self.e_phentsize, self.e_phnum = struct.unpack_from("<HH", data, 54)
        if self.e_phnum == 0 or self.e_phentsize != 56:
            raise ElfProblem("program header table missing or of the wrong entry size")
        if self.e_phoff + self.e_phnum * 56 > len(data):
            raise ElfProblem("program header table outside the image (truncated?)")

    def program_headers(self) -> None:
        data, size = self.data, len(self.data)
        headers = [struct.unpack_from("<IIQQQQQQ", data, self.e_phoff + i * 56) for i in range(self.e_phnum)]
        loads = [h for h in headers if h[0] == PT_LOAD]
        if not loads:
            raise ElfProblem("no loadable segment (PT_LOAD)")
        previous_end = 0
        for _t, flags, offset, vaddr, _pa, filesz, memsz, align in loads:
            if memsz and not flags & 4:  # PF_R
                raise ElfProblem("a loadable segment is not readable")
            if offset + filesz > size:
                raise ElfProblem("a loadable segment lies outside the image (truncated?)")
            if filesz > memsz or (filesz < memsz and not flags & PF_W):
                raise ElfProblem("a loadable segment has more file bytes than memory bytes, or zero-filled read-only bytes")
            if align & (align - 1) or (align > 1 and (vaddr - offset) % align):
                raise ElfProblem("a loadable segment is misaligned (p_align, p_vaddr, p_offset)")
            if vaddr < previous_end or vaddr + memsz >= 1 << 47:
                raise ElfProblem("loadable segments overlap, are out of order, or are too large")
            previous_end = vaddr + memsz
            self.image.segments.append((vaddr, memsz, offset, filesz, flags))
        self.executable = [s for s in self.image.segments if s[4] & PF_X]
        self.low, self.high = self.image.segments[0][0], previous_end
        dynamic = [h for h in headers if h[0] == PT_DYNAMIC]
        if not dynamic:
            raise ElfProblem("no dynamic segment: not a shared object")
        if len(dynamic) > 1 or sum(h[0] == PT_TLS for h in headers) > 1:
            raise ElfProblem("more than one dynamic or TLS segment")
        self.dynamic_vaddr, self.dynamic_size = dynamic[0][3], dynamic[0][5]
        if self.dynamic_size == 0:
            raise ElfProblem("the dynamic segment is empty")
        for p_type, _flags, offset, vaddr, _pa, filesz, memsz, align in headers:
            if p_type == PT_TLS and memsz:
                if filesz > memsz or memsz > _MAX_TLS or align == 0 or align & (align - 1) or align > 1 << 16:
                    raise ElfProblem("the TLS segment has a bad size or alignment")
                self.segment_of(vaddr, filesz, "the TLS initialisation image")
            elif p_type == PT_GNU_RELRO:
                self.segment_of(vaddr, memsz, "the RELRO segment")
            elif p_type in (PT_GNU_PROPERTY, PT_GNU_EH_FRAME):
                self.segment_of(vaddr, memsz, "a property or unwind segment")
            elif p_type == PT_NOTE and (filesz > _MAX_NOTE or offset + filesz > size):
                raise ElfProblem("a note segment is too large or outside the image")
            elif p_type == PT_PHDR:
                table = self.mem(vaddr, self.e_phnum * 56, "the PT_PHDR table")
                if table != data[self.e_phoff : self.e_phoff + self.e_phnum * 56]:
                    raise ElfProblem("PT_PHDR does not map the program header table")

    def dynamic(self) -> None:
        raw = self.mem(self.dynamic_vaddr, self.dynamic_size - self.dynamic_size % 16, "the dynamic section")
        entries: dict[int, int] = {}
        self.strings_used: list[tuple[int, int]] = []
        for tag, value in struct.iter_unpack("<qQ", raw):
            if tag == DT_NULL:
                break
            if tag in _STRING_TAGS:
                self.strings_used.append((tag, value))
            entries[tag] = value  # the loader keeps the last entry of a tag
        else:
            raise ElfProblem("the dynamic section has no DT_NULL terminator")
        self.dyn = entries
        for tag, name in ((DT_STRTAB, "DT_STRTAB"), (DT_STRSZ, "DT_STRSZ"), (DT_SYMTAB, "DT_SYMTAB")):
            if tag not in entries:
                raise ElfProblem(f"the dynamic section has no {name}")
        if entries.get(DT_SYMENT, 24) != 24:
            raise ElfProblem("DT_SYMENT is not the size of a symbol")
        for table, size, ent, width in ((DT_RELA, DT_RELASZ, DT_RELAENT, 24), (DT_REL, DT_RELSZ, DT_RELENT, 16), (DT_RELR, DT_RELRSZ, DT_RELRENT, 8)):
            if table in entries and (entries.get(ent) != width or size not in entries):
                raise ElfProblem("a relocation table lacks its size or has the wrong entry size")
        if DT_REL in entries:
            raise ElfProblem("REL relocations are not used on this machine (RELA only)")
        for group in ((DT_JMPREL, DT_PLTRELSZ, DT_PLTREL), (DT_RELA, DT_RELASZ, DT_RELAENT), (DT_RELR, DT_RELRSZ, DT_RELRENT),
                      (DT_VERNEED, DT_VERNEEDNUM), (DT_VERDEF, DT_VERDEFNUM)):
            if 0 < sum(tag in entries for tag in group) < len(group):
                raise ElfProblem(f"dynamic entries {', '.join(hex(t) for t in group)} must come together")
        if DT_PLTREL in entries and entries[DT_PLTREL] != DT_RELA:
            raise ElfProblem("DT_PLTREL is not DT_RELA")
        for array, size in ((DT_INIT_ARRAY, DT_INIT_ARRAYSZ), (DT_FINI_ARRAY, DT_FINI_ARRAYSZ)):
            if (array in entries) != (size in entries):
                raise ElfProblem("a constructor or destructor table lacks its size")
        if any(tag in entries for tag in (DT_AUXILIARY, DT_FILTER, DT_AUDIT, DT_DEPAUDIT)):
            raise ElfProblem("filters and audit libraries (DT_AUXILIARY, DT_FILTER, DT_AUDIT, DT_DEPAUDIT) are not supported")
        if DT_PREINIT_ARRAY in entries:
            raise ElfProblem("a shared object cannot have a preinit array")
        flags_1 = entries.get(DT_FLAGS_1, 0)
        if flags_1 & DF_1_PIE:
            raise ElfProblem("a position-independent executable (DF_1_PIE) cannot be loaded as a program")
        if flags_1 & DF_1_NOOPEN:
            raise ElfProblem("the object forbids dlopen (DF_1_NOOPEN)")
        self.textrel = DT_TEXTREL in entries or bool(entries.get(DT_FLAGS, 0) & DF_TEXTREL)
        if DT_PLTGOT in entries:
            self.mem(entries[DT_PLTGOT], 24, "DT_PLTGOT")

    def strings(self) -> None:
        self.strsz = self.dyn[DT_STRSZ]
        self.strtab = self.mem(self.dyn[DT_STRTAB], self.strsz, "the string table")
        for tag, offset in self.strings_used:
            self.string(offset, f"dynamic entry {tag:#x}")

    def hash_tables(self) -> None:
        """The number of dynamic symbols, from the hash tables (``_elf_tables``)."""
        self.nsyms = symbol_count(self.dyn, self.mem)

    def symbol_table(self) -> None:
        raw = self.mem(self.dyn[DT_SYMTAB], 24 * self.nsyms, "the dynamic symbol table")
        self.syms = list(struct.iter_unpack("<IBBHQQ", raw))
        for index, (st_name, info, other, shndx, value, size) in enumerate(self.syms):
            name = self.string(st_name, f"symbol {index}")
            kind = info & 0xF
            if info >> 4 not in (0, 1, 2, 10) or kind not in (0, 1, 2, 3, 4, 5, 6, 10) or other > 3:
                raise ElfProblem(f"symbol {index} has a reserved binding, type or visibility")
            if 0xFF00 <= shndx and shndx not in (SHN_ABS, 0xFFF2):  # SHN_COMMON
                raise ElfProblem(f"symbol {index} has a reserved section index {shndx:#x}")
            defined = index and shndx not in (SHN_UNDEF, SHN_ABS)
            if defined and self.sections is not None and shndx < 0xFF00 and shndx >= len(self.sections):
                raise ElfProblem(f"symbol {index} names section {shndx}, past the last one")
            if defined and self.sections is not None and shndx < 0xFF00 and kind in (STT_FUNC, STT_OBJECT, STT_GNU_IFUNC):
                start, length = self.sections[shndx]
                if not start <= value <= start + length or value + size > start + length:
                    raise ElfProblem(f"symbol {index} lies outside its own section")
            if defined and kind in (STT_GNU_IFUNC, STT_FUNC):
                self.code_address(value, f"function symbol {name.decode(errors='replace')!r}")
            elif defined and kind in (STT_OBJECT, STT_COMMON):
                self.segment_of(value, size, f"data symbol {name.decode(errors='replace')!r}")
            if defined and self.recorded is not None and name in self.recorded and (value, size, kind) not in self.recorded[name]:
                raise ElfProblem(f"dynamic symbol {name.decode(errors='replace')!r} disagrees with the full symbol table")
            if (
                index
                and shndx not in (SHN_UNDEF, SHN_ABS)
                and info >> 4 != STB_LOCAL
                and other & 3 in (0, 3)  # default or protected visibility
                and kind in (STT_FUNC, STT_OBJECT, STT_COMMON)
                and self.image.read(value, max(size, 1)) is not None
            ):
                try:
                    text = name.decode()
                except UnicodeDecodeError:
                    continue
                self.image.symbols[text] = Symbol(text, value, size, kind)

    def versions(self) -> None:
        """Symbol versions: chains inside the image, version indices in range (``_elf_tables``)."""
        check_versions(self.dyn, self.mem, self.string, self.nsyms)

    def relocations(self) -> None:
        """RELA, the PLT's and RELR relocations (``_elf_relocations``): ``relocated`` maps each
        target to (type, symbol, addend), RELR's to (-1, 0, 0)."""
        self.relocated: dict[int, tuple[int, int, int]] = check_relocations(self)

    def writable(self, vaddr: int, width: int, what: str) -> None:
        """A relocation writes ``width`` bytes at ``vaddr``: initialised (file-backed) bytes of a
        writable segment (or of any segment with DT_TEXTREL), never the dynamic section."""
        if vaddr < self.dynamic_vaddr + self.dynamic_size and self.dynamic_vaddr < vaddr + width:
            raise ElfProblem(f"{what} at {vaddr:#x} is inside the dynamic section")
        segment = self.segment_of(vaddr, width, what)
        if vaddr + width > segment[0] + segment[3]:
            raise ElfProblem(f"{what} at {vaddr:#x} is in zero-filled memory (.bss)")
        if not segment[4] & PF_W and not self.textrel:
            raise ElfProblem(f"{what} at {vaddr:#x} is in a read-only segment")

    def code_address(self, vaddr: int, what: str) -> None:
        """``vaddr`` is code the loader will call: inside an executable segment and, when the
        image keeps its full symbol table, the start of a function."""
        if not any(s[0] <= vaddr < s[0] + s[1] for s in self.executable):
            raise ElfProblem(f"{what} at {vaddr:#x} is not in an executable segment")
        if self.starts is not None and vaddr not in self.starts:
            raise ElfProblem(f"{what} at {vaddr:#x} is not the start of a function")

    def pointer(self, value: int, what: str) -> None:
        """A relocated pointer into the image points into a loaded segment (or just past one)."""
        if not any(start <= value <= start + memsz for start, memsz, _o, _f, _fl in self.image.segments):
            raise ElfProblem(f"{what} points to {value:#x}, outside the loaded segments")

    def function_starts(self) -> None:
        """From the section headers, when the image kept them (the loader never reads them:
        anything odd there only means "none"): where the sections are, the addresses of the
        functions of the full symbol table (.symtab), and the definitions it records for each
        global name, which the dynamic symbols must repeat."""
        facts = read_sections(self.data, self.image.segments)
        self.starts: set[int] | None = facts.starts
        self.sections: list[tuple[int, int]] | None = facts.sections
        self.recorded: dict[bytes, set[tuple[int, int, int]]] | None = facts.recorded
        self.progbits: dict[int, int] = facts.progbits
        self.relocation_sections: dict[int, int] = facts.relocation_sections

    def constructors(self) -> None:
        """DT_INIT/DT_FINI and every entry of the init and fini arrays, as relocated, must be code."""
        for tag, what in ((DT_INIT, "DT_INIT"), (DT_FINI, "DT_FINI")):
            if tag in self.dyn:
                self.code_address(self.dyn[tag], what)
        relative, absolute = RELATIVE.get(self.machine), ABS64.get(self.machine)
        for array, size_tag, what in ((DT_INIT_ARRAY, DT_INIT_ARRAYSZ, "constructor"), (DT_FINI_ARRAY, DT_FINI_ARRAYSZ, "destructor")):
            if array not in self.dyn:
                continue
            base, size = self.dyn[array], self.dyn[size_tag]
            raw = self.mem(base, size - size % 8, f"the {what} table")
            for index, (stored,) in enumerate(struct.iter_unpack("<Q", raw)):
                where = base + 8 * index
                r_type, r_sym, addend = self.relocated.get(where, (None, 0, 0))
                if r_type is None:
                    raise ElfProblem(f"{what} {index} is not relocated: it would be called at an absolute address")
                if r_type == -1:
                    target = stored
                elif r_type == relative:
                    target = addend
                elif r_type == absolute and r_sym and self.syms[r_sym][3] != SHN_UNDEF:
                    target = self.syms[r_sym][4] + addend
                elif r_type == absolute and r_sym:
                    continue  # a function of another object, found by the loader
                else:
                    raise ElfProblem(f"{what} {index} has an unexpected relocation type {r_type}")
                self.code_address(target, f"{what} {index}")
