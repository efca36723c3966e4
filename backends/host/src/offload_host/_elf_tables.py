"""The symbol hash and version tables of a host image, for ``_elf``'s checks: every chain the
dynamic loader walks ends inside the image and every index is in range."""

from __future__ import annotations

import struct
from collections.abc import Callable

from ._elf_format import DT_GNU_HASH, DT_HASH, DT_VERDEF, DT_VERNEED, DT_VERSYM, ElfProblem

_MAX_CHAIN_STEPS = 1 << 16

ReadMemory = Callable[[int, int, str], bytes]  # (vaddr, size, what) -> loaded bytes, or ElfProblem naming what
ReadString = Callable[[int, str], bytes]  # (string table offset, what) -> the string, or ElfProblem


def symbol_count(dyn: dict[int, int], mem: ReadMemory) -> int:
    """The number of dynamic symbols, from the hash tables of the dynamic section ``dyn`` (the
    loader walks both); raise ``ElfProblem`` on a bad header, an index out of range or an endless chain."""
    count = 0
    if DT_HASH in dyn:
        base = dyn[DT_HASH]
        nbucket, nchain = struct.unpack("<II", mem(base, 8, "DT_HASH"))
        if nbucket == 0:
            raise ElfProblem("DT_HASH has no buckets")
        words = struct.unpack(f"<{nbucket + nchain}I", mem(base + 8, 4 * (nbucket + nchain), "DT_HASH"))
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
    if DT_GNU_HASH in dyn:
        base = dyn[DT_GNU_HASH]
        nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack("<IIII", mem(base, 16, "DT_GNU_HASH"))
        if nbuckets == 0 or bloom_size == 0 or bloom_size & (bloom_size - 1) or bloom_shift >= 64:
            raise ElfProblem("DT_GNU_HASH has a bad header")
        buckets_at = base + 16 + 8 * bloom_size
        buckets = struct.unpack(f"<{nbuckets}I", mem(buckets_at, 4 * nbuckets, "DT_GNU_HASH buckets"))
        chains_at = buckets_at + 4 * nbuckets
        count = max(count, symoffset)
        for start in buckets:
            if start == 0:
                continue
            if start < symoffset:
                raise ElfProblem("DT_GNU_HASH has a bucket below its symbol offset")
            index = start
            while True:
                (word,) = struct.unpack("<I", mem(chains_at + 4 * (index - symoffset), 4, "a DT_GNU_HASH chain"))
                index += 1
                if word & 1:
                    break
                if index - start > _MAX_CHAIN_STEPS:
                    raise ElfProblem("a DT_GNU_HASH chain does not end")
            count = max(count, index)
    if not count and (DT_HASH not in dyn and DT_GNU_HASH not in dyn):
        raise ElfProblem("the object has no symbol hash table (DT_HASH or DT_GNU_HASH)")
    return count



def check_versions(dyn: dict[int, int], mem: ReadMemory, string: ReadString, nsyms: int) -> None:
    """Symbol versions: every Verneed/Verdef chain inside the image, every name a string, every
    version index of the ``nsyms`` symbols in range; raise ``ElfProblem`` otherwise."""
    high = 0
    for tag, what in ((DT_VERNEED, "Verneed"), (DT_VERDEF, "Verdef")):
        if tag not in dyn:
            continue
        at, steps = dyn[tag], 0
        while True:
            record = mem(at, 16 if tag == DT_VERNEED else 20, f"a {what} record")
            if tag == DT_VERNEED:
                version, cnt, file, aux, next_ = struct.unpack("<HHIII", record)
                string(file, "a Verneed file name")
            else:
                version, _flags, ndx, cnt, _hash, aux, next_ = struct.unpack("<HHHHIII", record)
                high = max(high, ndx & 0x7FFF)
            if version != 1:
                raise ElfProblem(f"unsupported {what} version {version}")
            aux_at = at + aux
            for _ in range(cnt):
                entry = mem(aux_at, 16 if tag == DT_VERNEED else 8, f"a {what} auxiliary record")
                if tag == DT_VERNEED:
                    _h, _f, other, name, aux_next = struct.unpack("<IHHII", entry)
                    high = max(high, other & 0x7FFF)
                else:
                    name, aux_next = struct.unpack("<II", entry)
                string(name, f"a {what} version name")
                if aux_next == 0:
                    break
                aux_at += aux_next
            steps += 1
            if next_ == 0:
                break
            if steps > _MAX_CHAIN_STEPS:
                raise ElfProblem(f"the {what} chain does not end")
            at += next_
    if DT_VERSYM in dyn:
        raw = mem(dyn[DT_VERSYM], 2 * nsyms, "the symbol version table")
        limit = max(high, 1)
        for index, (ndx,) in enumerate(struct.iter_unpack("<H", raw)):
            if ndx & 0x7FFF > limit:
                raise ElfProblem(f"symbol {index} has version index {ndx & 0x7FFF}, past the last version {limit}")
