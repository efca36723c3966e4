"""AMDGPU program images: code objects (ELF ``EM_AMDGPU``), clang offload bundles, and targets.

Pure parsing, no HIP: ``Target`` (a gfx processor with its xnack / sramecc settings),
``read_image`` (which code object of an image a device would run, or why none), and
``CodeObject`` (the ``NT_AMDGPU_METADATA`` kernels with their explicit arguments, and the
exported global variables). Every problem raises ``ValueError`` with a message naming it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from offload import KernelParam
from offload.backend.support import launch_extent

from . import _msgpack

__all__ = [
    "BUNDLE_MAGIC",
    "CodeObject",
    "KernelInfo",
    "Target",
    "code_object_for",
    "describe",
]

ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
NT_AMDGPU_METADATA = 32
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_BUNDLE_MAGIC = b"CCOB"

#: ``e_flags & EF_AMDGPU_MACH`` -> processor (LLVM's ELF.h; each checked against clang-19 output).
MACH_NAMES: Mapping[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702",
    0x025: "gfx703", 0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803",
    0x02B: "gfx810", 0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906",
    0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011",
    0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033",
    0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x04A: "gfx1151", 0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201", 0x04F: "gfx950",
    0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic",
    0x054: "gfx11-generic", 0x055: "gfx1152", 0x059: "gfx12-generic",
}  # fmt: skip
EF_AMDGPU_MACH = 0x0FF
# Code object v4 and later (ELF ABI version >= 2): two-bit settings.
EF_XNACK_V4, EF_SRAMECC_V4 = 0x300, 0xC00
_V4_SETTING = {0: None, 1: "any", 2: "-", 3: "+"}  # UNSUPPORTED, ANY, OFF, ON
# Code object v3 (ABI version 1): one bit each, "on" or "any".
EF_XNACK_V3, EF_SRAMECC_V3 = 0x100, 0x200


@dataclass(frozen=True)
class Target:
    """A gfx target: processor plus ``sramecc`` / ``xnack`` settings ("+", "-", "any", or None).

    None means the feature is not supported (devices) or not specified (code objects).
    """

    processor: str
    sramecc: str | None = None
    xnack: str | None = None

    @classmethod
    def parse(cls, text: str) -> Target:
        """``gfx90a``, ``gfx90a:sramecc+:xnack-`` (HIP's ``gcnArchName`` form)."""
        processor, *features = text.strip().split(":")
        if not processor.startswith("gfx"):
            raise ValueError(f"{text!r} is not a gfx target")
        settings: dict[str, str | None] = {"sramecc": None, "xnack": None}
        for feature in features:
            name, sign = feature[:-1], feature[-1:]
            if name not in settings or sign not in "+-" or not sign:
                raise ValueError(f"{text!r}: unknown target feature {feature!r}")
            settings[name] = sign
        return cls(processor, settings["sramecc"], settings["xnack"])

    def __str__(self) -> str:
        text = self.processor
        for name in ("sramecc", "xnack"):
            value = getattr(self, name)
            if value in ("+", "-"):
                text += f":{name}{value}"
        return text

    def runs_on(self, device: Target) -> str | None:
        """None when code built for ``self`` runs on ``device``; otherwise why not."""
        if self.processor != device.processor:
            return f"built for {self} but the device is {device}"
        for name in ("sramecc", "xnack"):
            wanted = getattr(self, name)
            if wanted in ("+", "-") and getattr(device, name) not in (wanted, "any"):
                return f"built for {self} ({name}{wanted}) but the device is {device}"
        return None


@dataclass(frozen=True)
class KernelInfo:
    """One kernel of a code object's metadata."""

    name: str
    params: tuple[KernelParam, ...]  # explicit arguments only (no hidden_*)
    kernarg_size: int  # .kernarg_segment_size (hidden arguments included)
    group_segment_size: int  # static LDS bytes
    max_group_size: int  # .max_flat_workgroup_size
    wavefront_size: int

    @property
    def explicit_size(self) -> int:
        """End of the last explicit argument: the least argument buffer a launch must bring."""
        return launch_extent(self.params)


_POINTER_KINDS = frozenset({"global_buffer", "dynamic_shared_pointer", "image", "sampler", "pipe", "queue"})
_SCALAR_PREFIXES = (("unsigned", "uint"), ("uint", "uint"), ("uchar", "uint"), ("ushort", "uint"),
                    ("ulong", "uint"), ("size_t", "uint"), ("bool", "uint"), ("char", "int"),
                    ("short", "int"), ("int", "int"), ("long", "int"), ("float", "float"),
                    ("double", "float"), ("half", "float"))  # fmt: skip


# OpenCL C element types (as ``.type_name`` spells them, e.g. "float*") -> numpy names; OpenCL's
# long is 64 bits. HIP code objects carry no ``.type_name``: their pointers stay untyped.
_ELEMENTS = {"bool": "bool", "char": "int8", "uchar": "uint8", "unsigned char": "uint8", "short": "int16",
             "ushort": "uint16", "unsigned short": "uint16", "int": "int32", "uint": "uint32",
             "unsigned int": "uint32", "long": "int64", "ulong": "uint64", "unsigned long": "uint64",
             "half": "float16", "float": "float32", "double": "float64"}  # fmt: skip


def _pointer_element(arg: Mapping[str, Any]) -> tuple[str | None, bool]:
    """(numpy name of the element type, const) of a global pointer argument, where the metadata
    says (``.type_name`` "float*", ``.is_const``); (None, False) when it does not."""
    if arg.get(".value_kind") != "global_buffer":
        return None, False
    type_name = str(arg.get(".type_name", "")).strip()
    if not type_name.endswith("*") or type_name.count("*") != 1:
        return None, False
    return _ELEMENTS.get(type_name[:-1].strip()), bool(arg.get(".is_const", False))


def _param_kind(arg: Mapping[str, Any]) -> str:
    value_kind = arg.get(".value_kind")
    if value_kind in _POINTER_KINDS:
        return "pointer"
    type_name = str(arg.get(".type_name", "")).strip()
    if type_name.endswith("*"):
        return "pointer"
    for prefix, kind in _SCALAR_PREFIXES:
        if type_name.startswith(prefix) and int(arg.get(".size", 0)) in (1, 2, 4, 8):
            return kind
    return "bytes"


@dataclass(frozen=True)
class CodeObject:
    """One AMDGPU code object (an ELF64 shared object for ``amdgcn-amd-amdhsa``)."""

    data: bytes
    target: Target
    abi_version: int  # code object version - 2 (v5 is 3)
    kernels: Mapping[str, KernelInfo]
    globals: Mapping[str, int]  # exported data symbols -> size

    @classmethod
    def parse(cls, data: bytes) -> CodeObject:
        elf = _Elf(data)
        metadata = elf.metadata()
        kernels: dict[str, KernelInfo] = {}
        entries = metadata.get("amdhsa.kernels", [])
        if not isinstance(entries, list):
            raise ValueError("code object metadata: amdhsa.kernels is not a list")
        for entry in entries:
            info = _kernel_info(entry)
            kernels[info.name] = info
        return cls(bytes(data), elf.target(), elf.abi_version, kernels, elf.data_symbols())


def _kernel_info(entry: Any) -> KernelInfo:
    if not isinstance(entry, dict) or not isinstance(entry.get(".name"), str):
        raise ValueError(f"code object metadata: a kernel entry without .name: {entry!r:.120}")
    name = entry[".name"]
    params = []
    for index, arg in enumerate(entry.get(".args", [])):
        try:
            value_kind, offset, size = arg[".value_kind"], int(arg[".offset"]), int(arg[".size"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"code object metadata: kernel {name!r} argument {index} is malformed: {arg!r:.120}"
            ) from exc
        if str(value_kind).startswith("hidden_"):
            continue  # the runtime appends these after the explicit arguments
        kind = _param_kind(arg)
        element, const = _pointer_element(arg) if kind == "pointer" else (None, False)
        params.append(KernelParam(offset, size, kind, str(arg.get(".name", "")), element, const and element is not None))
    return KernelInfo(
        name=name,
        params=tuple(params),
        kernarg_size=int(entry.get(".kernarg_segment_size", 0)),
        group_segment_size=int(entry.get(".group_segment_fixed_size", 0)),
        max_group_size=int(entry.get(".max_flat_workgroup_size", 1024)),
        wavefront_size=int(entry.get(".wavefront_size", 64)),
    )


class _Elf:
    """The few parts of an ELF64 little-endian AMDGPU object that a loader needs, bounds-checked."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 64 or data[:4] != ELF_MAGIC:
            raise ValueError("not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise ValueError("not an ELF64 little-endian file")
        (self.e_type, self.e_machine, _, _, _, self.e_shoff, self.e_flags, _, _, _, self.e_shentsize,
         self.e_shnum, self.e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)  # fmt: skip
        if self.e_machine != EM_AMDGPU:
            raise ValueError(f"ELF machine {self.e_machine} is not EM_AMDGPU ({EM_AMDGPU})")
        if data[7] != ELFOSABI_AMDGPU_HSA:
            raise ValueError(f"ELF OS/ABI {data[7]} is not AMDGPU_HSA ({ELFOSABI_AMDGPU_HSA})")
        self.data = data
        self.abi_version = data[8]
        self.sections = [self._section(i) for i in range(self.e_shnum)] if self.e_shoff else []

    def _section(self, index: int) -> tuple[int, int, int, int, int]:
        at = self.e_shoff + index * self.e_shentsize
        if self.e_shentsize < 64 or at + 64 > len(self.data):
            raise ValueError(f"section header {index} lies outside the file")
        _name, sh_type, _flags, _addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", self.data, at
        )
        if sh_type != 8 and offset + size > len(self.data):  # SHT_NOBITS has no file bytes
            raise ValueError(f"section {index} [{offset:#x}, {offset + size:#x}) lies outside the file")
        return sh_type, offset, size, link, entsize

    def target(self) -> Target:
        mach = self.e_flags & EF_AMDGPU_MACH
        processor = MACH_NAMES.get(mach)
        if processor is None:
            raise ValueError(f"unknown AMDGPU processor (EF_AMDGPU_MACH {mach:#x})")
        if self.abi_version >= 2:
            xnack = _V4_SETTING[(self.e_flags & EF_XNACK_V4) >> 8]
            sramecc = _V4_SETTING[(self.e_flags & EF_SRAMECC_V4) >> 10]
        else:
            xnack = "+" if self.e_flags & EF_XNACK_V3 else "any"
            sramecc = "+" if self.e_flags & EF_SRAMECC_V3 else "any"
        return Target(processor, sramecc, xnack)

    def metadata(self) -> dict[str, Any]:
        for sh_type, offset, size, _link, _entsize in self.sections:
            if sh_type != 7:  # SHT_NOTE
                continue
            pos, end = offset, offset + size
            while pos + 12 <= end:
                namesz, descsz, note_type = struct.unpack_from("<III", self.data, pos)
                name_at = pos + 12
                desc_at = name_at + ((namesz + 3) & ~3)
                next_at = desc_at + ((descsz + 3) & ~3)
                if desc_at + descsz > end:
                    raise ValueError(f"note at {pos:#x} runs past its section")
                name = self.data[name_at : name_at + namesz].rstrip(b"\0")
                if name == b"AMDGPU" and note_type == NT_AMDGPU_METADATA:
                    value = _msgpack.unpack(self.data[desc_at : desc_at + descsz])
                    if not isinstance(value, dict):
                        raise ValueError("NT_AMDGPU_METADATA is not a map")
                    return value
                pos = next_at
        raise ValueError("no NT_AMDGPU_METADATA note (not a code object v3 or later)")

    def data_symbols(self) -> dict[str, int]:
        """Defined global data (STT_OBJECT) symbols of ``.symtab`` (else ``.dynsym``), less kernel descriptors."""
        tables = [s for s in self.sections if s[0] == 2] or [s for s in self.sections if s[0] == 11]
        found: dict[str, int] = {}
        for _type, offset, size, link, entsize in tables[:1]:
            if link >= len(self.sections):
                raise ValueError("symbol table names a missing string table")
            str_offset, str_size = self.sections[link][1], self.sections[link][2]
            for at in range(offset, offset + size - 23, max(entsize, 24)):
                st_name, st_info, _other, shndx, _value, st_size = struct.unpack_from("<IBBHQQ", self.data, at)
                if st_info & 0xF != 1 or shndx == 0 or st_info >> 4 == 0:  # STT_OBJECT, defined, not LOCAL
                    continue
                if st_name >= str_size:
                    raise ValueError(f"symbol name offset {st_name} lies outside the string table")
                start = str_offset + st_name
                name = self.data[start : self.data.index(b"\0", start)].decode("utf-8", "replace")
                if not name.endswith(".kd"):
                    found[name] = st_size
        return found


def _bundle_entries(data: bytes) -> list[tuple[str, bytes]]:
    """The (triple, bytes) entries of an uncompressed clang offload bundle."""
    pos = len(BUNDLE_MAGIC)
    if len(data) < pos + 8:
        raise ValueError("offload bundle: truncated header")
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    entries = []
    for index in range(count):
        if pos + 24 > len(data):
            raise ValueError(f"offload bundle: entry {index} header is truncated")
        offset, size, triple_size = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if pos + triple_size > len(data) or offset + size > len(data):
            raise ValueError(f"offload bundle: entry {index} lies outside the file")
        triple = data[pos : pos + triple_size].decode("ascii", "replace")
        pos += triple_size
        entries.append((triple, data[offset : offset + size]))
    return entries


def _bundle_target(triple: str) -> Target | None:
    """``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` -> Target; None for other entries (host, ...)."""
    kind, _, rest = triple.partition("-")
    if kind not in ("hip", "hipv4", "openmp") or not rest.startswith("amdgcn-amd-amdhsa"):
        return None
    target_id = rest.split("-", 4)[-1] if rest.count("-") >= 4 else ""
    return Target.parse(target_id) if target_id.startswith("gfx") else None


def code_object_for(data: bytes, device: Target) -> CodeObject:
    """The code object in ``data`` (a code object or an offload bundle) that runs on ``device``.

    Raises ValueError saying why there is none (not an AMDGPU image, wrong target, malformed).
    """
    raw = bytes(data)
    if raw.startswith(COMPRESSED_BUNDLE_MAGIC):
        raise ValueError("compressed offload bundles (CCOB) are not supported; bundle without compression")
    if raw.startswith(BUNDLE_MAGIC):
        seen = []
        for triple, payload in _bundle_entries(raw):
            target = _bundle_target(triple)
            if target is None:
                continue
            seen.append(str(target))
            if target.runs_on(device) is None:
                return CodeObject.parse(payload)
        raise ValueError(f"the offload bundle has no code object for {device} (it has: {', '.join(seen) or 'none'})")
    code = CodeObject.parse(raw)
    problem = code.target.runs_on(device)
    if problem is not None:
        raise ValueError(f"the code object is {problem}")
    return code


def describe(data: bytes) -> str:
    """A short name for what ``data`` looks like, for error messages."""
    head = bytes(data[:32])
    if head.startswith(ELF_MAGIC):
        machine = struct.unpack_from("<H", head, 18)[0] if len(head) >= 20 else -1
        return {EM_AMDGPU: "an AMDGPU ELF", 190: "a CUDA cubin (EM_CUDA)", 62: "an x86-64 ELF"}.get(
            machine, f"an ELF for machine {machine}"
        )
    if head.startswith(BUNDLE_MAGIC):
        return "a clang offload bundle"
    if head.startswith(b"\x50\xed\x55\xba"):
        return "a CUDA fatbinary"
    return f"{len(data)} bytes of unknown format"
