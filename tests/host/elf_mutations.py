"""Corrupted program images for the loader fuzzer (``test_elf_fuzz.py``).

Base images are real shared objects built by ``offload_host.build_program`` in the shapes the
loader has to cope with (kernels only; linked with libc through the PLT and versioned symbols;
a version definition; SysV and GNU hash tables; RELR relocations; constructors; stripped).
Each corrupted image is one base image with one to three mutations inside one named ELF region,
chosen by a seeded generator, so the same seed always yields the same images.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import offload_host

_LIBC_PROGRAM = r"""
#include <offload_host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

OFFLOAD_EXPORT uint32_t counter[16];
OFFLOAD_EXPORT const char *greeting = "hello";
static char *scratch;

__attribute__((constructor)) static void setup(void) { scratch = malloc(64); snprintf(scratch, 64, "%s", greeting); }
__attribute__((destructor)) static void teardown(void) { free(scratch); }

struct foo_args { uint32_t *out; };

OFFLOAD_KERNEL(foo) {
  const struct foo_args *a = OFFLOAD_ARGS(struct foo_args);
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = (uint32_t)strlen(scratch) + tid.x; }
}
"""

_VERSION_SCRIPT = "OFFLOAD_1 { global: foo; counter; greeting; local: *; };\n"


@dataclass(frozen=True)
class BaseImage:
    name: str
    data: bytes
    regions: dict[str, tuple[int, int]]  # region name -> (file offset, size)


def _sections(data: bytes) -> dict[str, tuple[int, int]]:
    """Section name -> (file offset, size) of the sections that occupy file bytes."""
    e_shoff = struct.unpack_from("<Q", data, 40)[0]
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    names_offset = headers[e_shstrndx][4]
    found: dict[str, tuple[int, int]] = {}
    for sh_name, sh_type, _flags, _addr, offset, size, *_ in headers:
        end = data.index(b"\0", names_offset + sh_name)
        name = data[names_offset + sh_name : end].decode()
        if sh_type != 8 and size:  # SHT_NOBITS has no file bytes
            found[name] = (offset, size)
    return found


_REGION_SECTIONS = {
    "dynamic": (".dynamic",),
    "dynsym": (".dynsym",),
    "dynstr": (".dynstr",),
    "hash": (".hash", ".gnu.hash"),
    "relocations": (".rela.dyn", ".rela.plt", ".relr.dyn"),
    "versions": (".gnu.version", ".gnu.version_r", ".gnu.version_d"),
    "init_arrays": (".init_array", ".fini_array"),
}


def _regions(data: bytes) -> dict[str, tuple[int, int]]:
    sections = _sections(data)
    e_phoff = struct.unpack_from("<Q", data, 32)[0]
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    regions = {"elf_header": (0, 64), "program_headers": (e_phoff, e_phentsize * e_phnum)}
    for region, names in _REGION_SECTIONS.items():
        for name in names:
            if name in sections:
                regions[f"{region}:{name}"] = sections[name]
    return regions


#: Base images whose linker flags this toolchain refused (name -> why), e.g. RELR before binutils 2.38.
UNBUILDABLE: dict[str, str] = {}


def base_images() -> list[BaseImage]:
    """The clean images every corrupted image starts from (built once, cached on disk)."""
    from offload import OffloadError

    relr = ["-Wl,-z,pack-relative-relocs"]
    recipes = [
        ("foo", lambda: offload_host.build_test_kernel("foo")),
        ("global_ctor", lambda: offload_host.build_test_kernel("global_ctor")),
        ("libc_sysv_gnu_hash", lambda: offload_host.build_program(_LIBC_PROGRAM, name="libc_both", cflags=["-Wl,--hash-style=both"])),
        ("libc_relr", lambda: offload_host.build_program(_LIBC_PROGRAM, name="libc_relr", cflags=relr)),
        # stripped (no .symtab): the checks cannot know where functions start
        ("libc_relr_stripped", lambda: offload_host.build_program(_LIBC_PROGRAM, name="libc_relr_s", cflags=[*relr, "-s"])),
    ]
    images = []
    for name, build in recipes:
        try:
            data = build()
        except OffloadError as exc:
            if name in ("foo", "global_ctor"):
                raise
            UNBUILDABLE[name] = str(exc)
            continue
        images.append(BaseImage(name, data, _regions(data)))
    return images


def versioned_image(tmp_dir: str) -> BaseImage:
    """The libc program with a version definition (needs a version script file)."""
    import pathlib

    script = pathlib.Path(tmp_dir) / "offload.map"
    script.write_text(_VERSION_SCRIPT)
    data = offload_host.build_program(_LIBC_PROGRAM, name="libc_verdef", cflags=[f"-Wl,--version-script={script}"], cache=False)
    return BaseImage("libc_verdef", data, _regions(data))


_INTERESTING = (0, 1, 2, 7, 8, 0x10, 0x7F, 0x80, 0xFF, 0x100, 0x1000, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF,
                0x80000000, 2**63, 2**64 - 1, 2**64 - 8, 2**32 + 8)


def _mutate(rng: random.Random, image: bytearray, offset: int, size: int) -> str:
    """Apply one mutation inside [offset, offset + size); return what it did."""
    how = rng.randrange(5)
    if how <= 1:  # flip one bit (the most likely damage)
        at = offset + rng.randrange(size)
        bit = rng.randrange(8)
        image[at] ^= 1 << bit
        return f"flip {at:#x}.{bit}"
    if how == 2:  # a random byte
        at = offset + rng.randrange(size)
        image[at] = rng.randrange(256)
        return f"byte {at:#x}={image[at]:#x}"
    width = rng.choice((2, 4, 8))
    if size < width:
        at = offset + rng.randrange(size)
        image[at] ^= 0xFF
        return f"invert {at:#x}"
    at = offset + rng.randrange(size - width + 1) // width * width
    old = int.from_bytes(image[at : at + width], "little")
    if how == 3:
        value = rng.choice(_INTERESTING)
    else:  # nudge: off by a little, or by a large power of two
        value = old + rng.choice((-8, -1, 1, 8, 64, 4096, 2**20, 2**31, -(2**31)))
    value &= (1 << (8 * width)) - 1
    image[at : at + width] = value.to_bytes(width, "little")
    return f"word{width} {at:#x}: {old:#x}->{value:#x}"


def corrupted_images(bases: list[BaseImage], seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    """``count`` corrupted images as (description, bytes), spread evenly over every region of
    every base image, deterministic for ``seed``."""
    rng = random.Random(seed)
    targets = [(base, region) for base in bases for region in sorted(base.regions)]
    for index in range(count):
        base, region = targets[index % len(targets)]
        offset, size = base.regions[region]
        image = bytearray(base.data)
        steps = [_mutate(rng, image, offset, size) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        yield f"#{index} {base.name} {region} {'; '.join(steps)}", bytes(image)


_SIZE_TAGS = {8: ".rela.dyn", 2: ".rela.plt", 35: ".relr.dyn"}  # DT_RELASZ DT_PLTRELSZ DT_RELRSZ


def _size_entries(data: bytes) -> dict[int, int]:
    """File offset of the d_val of each relocation-size entry of the dynamic section -> tag."""
    offset, size = _sections(data)[".dynamic"]
    found = {}
    for at in range(offset, offset + size - 15, 16):
        tag = struct.unpack_from("<q", data, at)[0]
        if tag in _SIZE_TAGS:
            found[at + 8] = tag
    return found


def _relocations(data: bytes, size_entries: dict[int, int]) -> tuple[set[tuple[int, int, int, int]], set[int]] | None:
    """(RELA entries as (offset, type, symbol, addend), RELR targets) as the loader reads them:
    the tables of the section headers, as long as the dynamic section says; None when the
    dynamic section claims more than the tables hold."""
    try:
        sections = _sections(data)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None
    sizes = {_SIZE_TAGS[tag]: struct.unpack_from("<Q", data, at)[0] for at, tag in size_entries.items()}
    tables: dict[str, bytes] = {}
    for name in (".rela.dyn", ".rela.plt", ".relr.dyn"):
        if name in sections:
            offset, size = sections[name]
            if sizes.get(name, size) > size:
                return None
            tables[name] = data[offset : offset + sizes.get(name, size)]
    rela: set[tuple[int, int, int, int]] = set()
    for name in (".rela.dyn", ".rela.plt"):
        raw = tables.get(name, b"")
        for r_offset, info, addend in struct.iter_unpack("<QQq", raw[: len(raw) - len(raw) % 24]):
            rela.add((r_offset, info & 0xFFFFFFFF, info >> 32, addend))
    relr: set[int] = set()
    where = 0
    raw = tables.get(".relr.dyn", b"")
    for (entry,) in struct.iter_unpack("<Q", raw[: len(raw) - len(raw) % 8]):
        if entry & 1 == 0:
            relr.add(entry)
            where = entry + 8
        else:
            for bit in range(63):
                if entry >> (bit + 1) & 1:
                    relr.add(where + 8 * bit)
            where += 63 * 8
    return rela, relr


def changes_only_relocation_meaning(base: bytes, image: bytes) -> bool:
    """Whether ``image`` differs from ``base`` only in the values its relocations compute: every
    relocation still writes where one wrote before (or was dropped: RELR bits cleared, a type
    turned into NONE, a table size shrunk in the dynamic section), with a plain value type (another symbol, another addend, RELATIVE instead
    of GLOB_DAT). The loader writes the same places; what changed is what the program's data
    means, like a flipped bit in its code, which no loader can tell from a real program."""
    sections = _sections(base)
    size_entries = _size_entries(base)
    blank_base, blank_image = bytearray(base), bytearray(image)
    for name in (".rela.dyn", ".rela.plt", ".relr.dyn"):
        if name in sections:  # outside the relocation tables and their sizes, nothing may differ
            offset, size = sections[name]
            blank_base[offset : offset + size] = blank_image[offset : offset + size] = bytes(size)
    for at in size_entries:
        blank_base[at : at + 8] = blank_image[at : at + 8] = bytes(8)
    if blank_base != blank_image:
        return False
    before, after = _relocations(base, size_entries), _relocations(image, size_entries)
    if before is None or after is None:
        return False
    (rela_before, relr_before), (rela_after, relr_after) = before, after
    if not relr_after <= relr_before:
        return False
    offset, size = _sections(base)[".dynsym"]
    symbols = [struct.unpack_from("<IBBHQQ", base, at) for at in range(offset, offset + size, 24)]
    places = {offset: r_type for offset, r_type, _s, _a in rela_before}
    for offset, r_type, sym, _addend in rela_after - rela_before:
        if r_type == 0:
            continue
        if offset not in places or r_type not in {places[offset], 1, 6, 7, 8}:  # 64 GLOB_DAT JUMP_SLOT RELATIVE
            return False
        # a well-formed relocation of that type: RELATIVE names no symbol, the others an
        # existing non-TLS one
        if (r_type == 8) != (sym == 0) or sym >= len(symbols) or symbols[sym][1] & 0xF == 6:
            return False
    return True


def _called_code(data: bytes) -> tuple[set[int], list[tuple[int, int]], dict[str, tuple[int, int]]] | None:
    """(the addresses the loader calls: DT_INIT, DT_FINI and the init/fini array entries as RELR
    leaves them, the executable segments, the sections) of an image without RELA-relocated
    arrays; None when it cannot be read that way."""
    try:
        sections = _sections(data)
        offset, size = sections[".dynamic"]
        dyn = dict(struct.iter_unpack("<qQ", data[offset : offset + size]))
        phoff = struct.unpack_from("<Q", data, 32)[0]
        phnum = struct.unpack_from("<H", data, 56)[0]
        segments = [struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i) for i in range(phnum)]
    except (struct.error, ValueError, KeyError, IndexError, UnicodeDecodeError):
        return None
    code = [(vaddr, memsz) for p_type, flags, _o, vaddr, _p, _f, memsz, _a in segments if p_type == 1 and flags & 1]
    called = {dyn[tag] for tag in (12, 13) if tag in dyn}  # DT_INIT DT_FINI
    for name in (".init_array", ".fini_array"):
        if name in sections:
            offset, size = sections[name]
            called.update(value for (value,) in struct.iter_unpack("<Q", data[offset : offset + size]))
    return called, code, sections


def moves_stripped_code_pointers(base: bytes, image: bytes) -> bool:
    """Whether ``image`` differs from a STRIPPED, RELR-relocated ``base`` only in the code
    addresses the loader calls (DT_INIT, DT_FINI, init/fini array entries), all still inside an
    executable segment. Without a symbol table nothing tells where the image's functions start:
    such an image is, to any loader, a program whose constructor crashes."""
    if ".symtab" in _sections(base) or ".relr.dyn" not in _sections(base):
        return False
    before, after = _called_code(base), _called_code(image)
    if before is None or after is None:
        return False
    _called, code, sections = before
    blank_base, blank_image = bytearray(base), bytearray(image)
    for name in (".init_array", ".fini_array"):
        if name in sections:
            offset, size = sections[name]
            blank_base[offset : offset + size] = blank_image[offset : offset + size] = bytes(size)
    offset, size = sections[".dynamic"]
    for at in range(offset, offset + size - 15, 16):
        if struct.unpack_from("<q", base, at)[0] in (12, 13):
            blank_base[at + 8 : at + 16] = blank_image[at + 8 : at + 16] = bytes(8)
    if blank_base != blank_image:
        return False
    return all(any(start <= address < start + size for start, size in code) for address in after[0])
