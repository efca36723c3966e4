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
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["ElfImage", "ElfProblem", "Symbol", "inspect"]

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

_STRING_TAGS = (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_AUXILIARY, DT_FILTER, DT_CONFIG, DT_DEPAUDIT, DT_AUDIT)
_MAX_TLS = 1 << 30  # a larger TLS block cannot be allocated per thread anyway
_MAX_NOTE = 1 << 16  # glibc reads PT_NOTE onto the stack (alloca)
_MAX_CHAIN_STEPS = 1 << 16

# Relocation types of shared objects that glibc's dl-machine.h applies, with the bytes each
# writes at r_offset (COPY and the 32-bit types are refused: linkers never emit them for a
# shared object).
_EM_X86_64, _EM_AARCH64 = 62, 183
_RELOCATIONS: dict[int, dict[int, int]] = {
    _EM_X86_64: {
        0: 0,  # NONE
        1: 8, 6: 8, 7: 8, 8: 8,  # 64 GLOB_DAT JUMP_SLOT RELATIVE
        16: 8, 17: 8, 18: 8, 33: 8, 36: 16, 37: 8,  # DTPMOD64 DTPOFF64 TPOFF64 SIZE64 TLSDESC IRELATIVE
    },
    _EM_AARCH64: {
        0: 0, 257: 8, 1025: 8, 1026: 8, 1027: 8,  # NONE ABS64 GLOB_DAT JUMP_SLOT RELATIVE
        1028: 8, 1029: 8, 1030: 8, 1031: 16, 1032: 8,  # TLS_DTPMOD TLS_DTPREL TLS_TPREL TLSDESC IRELATIVE
    },
}
# Types that only make sense against a real symbol, and those a PLT (DT_JMPREL) may hold.
_NEED_SYMBOL = {_EM_X86_64: {1, 6, 7, 17, 33}, _EM_AARCH64: {257, 1025, 1026, 1029}}
_GOT_TYPES = {_EM_X86_64: {6, 7}, _EM_AARCH64: {1025, 1026}}
_PLT_TYPES = {_EM_X86_64: {7, 36, 37}, _EM_AARCH64: {1026, 1031, 1032}}
_TLS_TYPES = {_EM_X86_64: {16, 17, 18, 36}, _EM_AARCH64: {1028, 1029, 1030, 1031}}
_RELATIVE = {_EM_X86_64: 8, _EM_AARCH64: 1027}
_ABS64 = {_EM_X86_64: 1, _EM_AARCH64: 257}
_IRELATIVE = {_EM_X86_64: 37, _EM_AARCH64: 1032}


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
        """The number of dynamic symbols, from the hash tables (the loader walks both)."""
        count = 0
        if DT_HASH in self.dyn:
            base = self.dyn[DT_HASH]
            nbucket, nchain = struct.unpack("<II", self.mem(base, 8, "DT_HASH"))
            if nbucket == 0:
                raise ElfProblem("DT_HASH has no buckets")
            words = struct.unpack(f"<{nbucket + nchain}I", self.mem(base + 8, 4 * (nbucket + nchain), "DT_HASH"))
            buckets, chains = words[:nbucket], words[nbucket:]
            seen = bytearray(nchain)
            for start in buckets:
                index = start
                while index:
                    if index >= nchain or seen[index]:
                        raise ElfProblem("DT_HASH has an index out of range or a cycle")
                    seen[index] = 1
                    index = chains[index]
            count = nchain
        if DT_GNU_HASH in self.dyn:
            base = self.dyn[DT_GNU_HASH]
            nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack("<IIII", self.mem(base, 16, "DT_GNU_HASH"))
            if nbuckets == 0 or bloom_size == 0 or bloom_size & (bloom_size - 1) or bloom_shift >= 64:
                raise ElfProblem("DT_GNU_HASH has a bad header")
            buckets_at = base + 16 + 8 * bloom_size
            buckets = struct.unpack(f"<{nbuckets}I", self.mem(buckets_at, 4 * nbuckets, "DT_GNU_HASH buckets"))
            chains_at = buckets_at + 4 * nbuckets
            count = max(count, symoffset)
            for start in buckets:
                if start == 0:
                    continue
                if start < symoffset:
                    raise ElfProblem("DT_GNU_HASH has a bucket below its symbol offset")
                index = start
                while True:
                    (word,) = struct.unpack("<I", self.mem(chains_at + 4 * (index - symoffset), 4, "a DT_GNU_HASH chain"))
                    index += 1
                    if word & 1:
                        break
                    if index - start > _MAX_CHAIN_STEPS:
                        raise ElfProblem("a DT_GNU_HASH chain does not end")
                count = max(count, index)
        if not count and (DT_HASH not in self.dyn and DT_GNU_HASH not in self.dyn):
            raise ElfProblem("the object has no symbol hash table (DT_HASH or DT_GNU_HASH)")
        self.nsyms = count

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
        """Symbol versions: every chain inside the image, every version index in range."""
        high = 0
        for tag, what in ((DT_VERNEED, "Verneed"), (DT_VERDEF, "Verdef")):
            if tag not in self.dyn:
                continue
            at, steps = self.dyn[tag], 0
            while True:
                record = self.mem(at, 16 if tag == DT_VERNEED else 20, f"a {what} record")
                if tag == DT_VERNEED:
                    version, cnt, file, aux, next_ = struct.unpack("<HHIII", record)
                    self.string(file, "a Verneed file name")
                else:
                    version, _flags, ndx, cnt, _hash, aux, next_ = struct.unpack("<HHHHIII", record)
                    high = max(high, ndx & 0x7FFF)
                if version != 1:
                    raise ElfProblem(f"unsupported {what} version {version}")
                aux_at = at + aux
                for _ in range(cnt):
                    entry = self.mem(aux_at, 16 if tag == DT_VERNEED else 8, f"a {what} auxiliary record")
                    if tag == DT_VERNEED:
                        _h, _f, other, name, aux_next = struct.unpack("<IHHII", entry)
                        high = max(high, other & 0x7FFF)
                    else:
                        name, aux_next = struct.unpack("<II", entry)
                    self.string(name, f"a {what} version name")
                    if aux_next == 0:
                        break
                    aux_at += aux_next
                steps += 1
                if next_ == 0:
                    break
                if steps > _MAX_CHAIN_STEPS:
                    raise ElfProblem(f"the {what} chain does not end")
                at += next_
        if DT_VERSYM in self.dyn:
            raw = self.mem(self.dyn[DT_VERSYM], 2 * self.nsyms, "the symbol version table")
            limit = max(high, 1)
            for index, (ndx,) in enumerate(struct.iter_unpack("<H", raw)):
                if ndx & 0x7FFF > limit:
                    raise ElfProblem(f"symbol {index} has version index {ndx & 0x7FFF}, past the last version {limit}")

    def relocations(self) -> None:
        types = _RELOCATIONS.get(self.machine)
        self.relocated: dict[int, tuple[int, int, int]] = {}  # target -> (type, symbol, addend)
        plt_slots: list[tuple[int, int]] = []
        written: set[int] = set()  # 8-byte words written by RELA relocations
        got_entries: set[tuple[int, int]] = set()  # (GLOB_DAT or JUMP_SLOT, symbol)
        for table, size_tag, what in ((DT_RELA, DT_RELASZ, "DT_RELA"), (DT_JMPREL, DT_PLTRELSZ, "DT_JMPREL")):
            if table not in self.dyn:
                continue
            size = self.dyn[size_tag]
            self.table_size(table, size, what)
            if size % 24:
                raise ElfProblem(f"{what} size is not a whole number of entries")
            raw = self.mem(self.dyn[table], size, what)
            for r_offset, r_info, addend in struct.iter_unpack("<QQq", raw):
                r_type, r_sym = r_info & 0xFFFFFFFF, r_info >> 32
                if r_sym >= self.nsyms:
                    raise ElfProblem(f"a relocation names symbol {r_sym}, past the {self.nsyms} symbols")
                if types is not None:
                    if r_type not in types:
                        raise ElfProblem(f"relocation type {r_type} is not supported on this machine")
                    width = types[r_type]
                    if table == DT_JMPREL and r_type not in _PLT_TYPES[self.machine]:
                        raise ElfProblem(f"relocation type {r_type} does not belong in the PLT relocations")
                    if r_sym and r_type in (_RELATIVE[self.machine], _IRELATIVE[self.machine]):
                        raise ElfProblem(f"a relocation of type {r_type} names a symbol")
                    if r_sym == 0 and r_type in _NEED_SYMBOL[self.machine]:
                        raise ElfProblem(f"a relocation of type {r_type} names no symbol")
                    if r_type in _GOT_TYPES[self.machine]:
                        if addend:
                            raise ElfProblem("a GOT or PLT relocation has an addend")
                        if (r_type, r_sym) in got_entries:  # linkers make one GOT entry / PLT slot per symbol
                            raise ElfProblem(f"symbol {r_sym} has two relocations of type {r_type}")
                        got_entries.add((r_type, r_sym))
                    if r_sym:
                        _n, info, other, shndx, _v, _s = self.syms[r_sym]
                        if info >> 4 == STB_LOCAL:
                            raise ElfProblem(f"a relocation names local symbol {r_sym} (linkers use RELATIVE)")
                        if (r_type in _TLS_TYPES[self.machine]) != (info & 0xF == STT_TLS):
                            raise ElfProblem(f"relocation type {r_type} does not fit the kind of symbol {r_sym}")
                        if shndx == SHN_UNDEF and (info >> 4 not in (1, 2, 10) or other & 3):
                            raise ElfProblem(f"a relocation names undefined symbol {r_sym}, which is not global with default visibility")
                    if r_type == _IRELATIVE.get(self.machine):
                        self.code_address(addend, "an IRELATIVE resolver")
                    elif r_type == _RELATIVE.get(self.machine):
                        self.pointer(addend, "a RELATIVE relocation")
                    elif r_type == _ABS64.get(self.machine) and r_sym and self.syms[r_sym][3] not in (SHN_UNDEF, SHN_ABS):
                        self.pointer(self.syms[r_sym][4] + addend, "an absolute relocation")
                else:
                    width = 8
                if width:
                    self.writable(r_offset, width, f"the target of a {what} relocation")
                    if r_offset % 8:
                        raise ElfProblem(f"the target of a {what} relocation at {r_offset:#x} is misaligned")
                    words = range(r_offset, r_offset + width, 8)
                    if any(word in written for word in words):
                        raise ElfProblem(f"two relocations write the bytes at {r_offset:#x}")
                    if DT_PLTGOT in self.dyn and any(self.dyn[DT_PLTGOT] <= w < self.dyn[DT_PLTGOT] + 24 for w in words):
                        raise ElfProblem(f"a relocation writes the reserved words of DT_PLTGOT at {r_offset:#x}")
                    written.update(words)
                self.relocated[r_offset] = (r_type, r_sym, addend)
                if table == DT_JMPREL:
                    plt_slots.append((r_offset, width))
        if plt_slots and DT_PLTGOT in self.dyn and types is not None:
            # The PLT's GOT: three reserved words, then the slots of the PLT relocations, each
            # written by exactly one of them, inside the GOT's section when the image kept it.
            first = self.dyn[DT_PLTGOT] + 24
            end = first + sum(width for _, width in plt_slots)
            got_size = self.progbits.get(self.dyn[DT_PLTGOT])
            if got_size is not None and end - first + 24 > got_size:
                raise ElfProblem(f"the PLT relocations need {end - first} bytes of the PLT's GOT, which has {got_size - 24}")
            if any(not first <= at < end for at, _ in plt_slots):
                raise ElfProblem("a PLT relocation writes outside the PLT's slots of DT_PLTGOT")
        self.relr_done: set[int] = set()
        if DT_RELR in self.dyn:
            size = self.dyn[DT_RELRSZ]
            self.table_size(DT_RELR, size, "DT_RELR")
            if size % 8:
                raise ElfProblem("DT_RELRSZ is not a whole number of entries")
            where: int | None = None
            for (entry,) in struct.iter_unpack("<Q", self.mem(self.dyn[DT_RELR], size, "DT_RELR")):
                if entry & 1 == 0:
                    self.relr_target(entry)
                    where = entry + 8
                else:
                    if where is None:
                        raise ElfProblem("a RELR bitmap comes before any RELR address")
                    bits, index = entry >> 1, 0
                    while bits:
                        if bits & 1:
                            self.relr_target(where + 8 * index)
                        bits >>= 1
                        index += 1
                    where += 63 * 8

    def table_size(self, table: int, size: int, what: str) -> None:
        """A relocation table the dynamic section names is not empty and, when the image kept its
        section headers, starts at a relocation section and covers all of it: linkers write
        nothing else."""
        if not size:
            raise ElfProblem(f"{what} is named but empty")
        if not self.relocation_sections:
            return
        section = self.relocation_sections.get(self.dyn[table])
        if section is None:
            raise ElfProblem(f"{what} does not start at a relocation section")
        if size < section:
            raise ElfProblem(f"{what} covers {size} bytes of its {section}-byte section")

    def relr_target(self, vaddr: int) -> None:
        """A RELR relocation adds the base to the pointer stored at ``vaddr`` (once)."""
        self.writable(vaddr, 8, "the target of a RELR relocation")
        if vaddr in self.relr_done:
            raise ElfProblem(f"RELR relocates {vaddr:#x} twice")
        self.relr_done.add(vaddr)
        (stored,) = struct.unpack("<Q", self.mem(vaddr, 8, "a RELR target"))
        self.pointer(stored, "a RELR relocation")
        self.relocated.setdefault(vaddr, (-1, 0, 0))

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
        self.starts: set[int] | None = None
        self.sections: list[tuple[int, int]] | None = None
        self.recorded: dict[bytes, set[tuple[int, int, int]]] | None = None  # name -> {(value, size, type)}
        self.progbits: dict[int, int] = {}  # address -> size of writable data sections
        self.relocation_sections: dict[int, int] = {}  # address -> size of RELA/RELR sections
        data = self.data
        try:
            e_shoff = struct.unpack_from("<Q", data, 40)[0]
            e_shentsize, e_shnum = struct.unpack_from("<HH", data, 58)
            if e_shentsize != 64 or not e_shnum or e_shoff + 64 * e_shnum > len(data):
                return
            headers = [struct.unpack_from("<4xIQQQQI4x8xQ", data, e_shoff + 64 * i) for i in range(e_shnum)]
            self.sections = [(addr, size) for _t, _f, addr, _o, size, _l, _e in headers]
            for sh_type, flags, addr, offset, size, _link, _e in headers:
                # Allocated sections must be where the segments map them (else the segments map
                # other bytes than the code and data the symbols describe).
                if flags & 2 and sh_type != 8 and size:  # SHF_ALLOC, not SHT_NOBITS
                    mapped = False
                    for vaddr, memsz, seg_offset, filesz, _fl in self.image.segments:
                        if vaddr <= addr < vaddr + memsz:
                            if addr + size > vaddr + filesz or offset - seg_offset != addr - vaddr:
                                raise ElfProblem(f"the section at {addr:#x} is not where its segment maps it")
                            mapped = True
                    if not mapped:
                        raise ElfProblem(f"the section at {addr:#x} is in no loadable segment")
                if sh_type == 1 and flags & 3 == 3:  # a writable SHT_PROGBITS: maybe the PLT's GOT
                    self.progbits[addr] = size
                if sh_type in (4, 19):  # SHT_RELA, SHT_RELR
                    self.relocation_sections[addr] = size
            for sh_type, _flags, _addr, offset, size, link, entsize in headers:
                if sh_type != 2:  # SHT_SYMTAB
                    continue
                if entsize != 24 or offset + size > len(data) or link >= len(headers):
                    return
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
                self.starts, self.recorded = starts, recorded
                return
        except struct.error:
            return

    def constructors(self) -> None:
        """DT_INIT/DT_FINI and every entry of the init and fini arrays, as relocated, must be code."""
        for tag, what in ((DT_INIT, "DT_INIT"), (DT_FINI, "DT_FINI")):
            if tag in self.dyn:
                self.code_address(self.dyn[tag], what)
        relative, absolute = _RELATIVE.get(self.machine), _ABS64.get(self.machine)
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
