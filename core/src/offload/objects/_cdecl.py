"""A parser for C parameter declarations, as kernel signatures spell them.

``parse_param("const float *__restrict__ x")`` gives ``CParam(name="x", kind="pointer", size=8,
element="float32", const_element=True)``. It follows C's rules for combining type specifiers
(``unsigned char`` is 1 byte, ``unsigned long`` and ``long long`` 8 on LP64, ``short int`` 2,
``signed`` alone is ``int``) with the fixed-width and common typedef names (``int32_t``,
``size_t``, ``half``, ...). Qualifiers (``const``, ``volatile``, ``restrict`` and its GNU
spellings) are allowed anywhere C allows them; an array parameter (``float x[]``) is a pointer,
as in C. What is not a declaration C accepts is a ``CSyntaxError``; a type name it does not know
is an ``UnknownType`` (both ``ValueError``, their message says what was wrong).

Pointers to ``void``, to a ``struct``/``union`` or to another pointer have no element type
(``element`` is None): anything may be passed for them.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from dataclasses import dataclass

POINTER_SIZE = struct.calcsize("P")
LONG_SIZE = struct.calcsize("l")

_QUALIFIERS = frozenset({"const", "volatile", "restrict", "__restrict", "__restrict__", "__const", "__volatile__"})
_BASE_WORDS = frozenset({"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool", "bool"})
_TAGS = frozenset({"struct", "union", "enum"})

# typedef names and numpy-style names: (kind, size, numpy element type)
TYPEDEFS: dict[str, tuple[str, int, str]] = {}
for _names, _kind, _size, _element in (
    ("int8_t, int8, i8", "int", 1, "int8"),
    ("uint8_t, uint8, u8", "uint", 1, "uint8"),
    ("int16_t, int16, i16", "int", 2, "int16"),
    ("uint16_t, uint16, u16", "uint", 2, "uint16"),
    ("int32_t, int32, i32", "int", 4, "int32"),
    ("uint32_t, uint32, u32", "uint", 4, "uint32"),
    ("int64_t, int64, i64", "int", 8, "int64"),
    ("uint64_t, uint64, u64", "uint", 8, "uint64"),
    ("ssize_t, ptrdiff_t, intptr_t", "int", POINTER_SIZE, f"int{POINTER_SIZE * 8}"),
    ("size_t, uintptr_t", "uint", POINTER_SIZE, f"uint{POINTER_SIZE * 8}"),
    ("half, _Float16, __half, float16, f16", "float", 2, "float16"),
    ("float32, f32", "float", 4, "float32"),
    ("float64, f64", "float", 8, "float64"),
):
    for _name in _names.split(", "):
        TYPEDEFS[_name] = (_kind, _size, _element)

_TOKEN = re.compile(r"\s*(?:([A-Za-z_]\w*)|(\*)|(\[)|(\])|(\d+)|(\S))")


class CSyntaxError(ValueError):
    """Not a parameter declaration C accepts."""


class UnknownType(ValueError):
    """A type name that is neither a C type nor one of the known typedefs."""


@dataclass(frozen=True)
class CParam:
    """One parsed parameter: ``kind`` is ``"int"``, ``"uint"``, ``"float"`` or ``"pointer"``;
    ``element`` the numpy name of what a pointer points to (None: untyped, or not a pointer)."""

    name: str
    kind: str
    size: int
    element: str | None = None
    const_element: bool = False


def _tokens(text: str) -> list[str]:
    out = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:  # trailing blanks
            break
        position = match.end()
        token = match.group(match.lastindex or 0)
        if match.lastindex == 6:
            raise CSyntaxError(f"unexpected {token!r}")
        out.append(token)
    return out


def _base_type(words: list[str]) -> tuple[str, int, str] | None:
    """(kind, size, element) of a list of C base-type words; None for ``void``."""
    count = Counter(words)
    text = " ".join(words)
    signs = count["signed"] + count["unsigned"]
    if signs > 1 or count["short"] > 1 or count["long"] > 2 or any(count[w] > 1 for w in ("char", "int", "float", "double", "void", "_Bool", "bool")):
        raise CSyntaxError(f"{text!r} is not a C type")
    cores = [w for w in ("void", "char", "float", "double", "_Bool", "bool") if count[w]]
    if len(cores) > 1 or (cores and count["int"]):
        raise CSyntaxError(f"{text!r} is not a C type")
    core = cores[0] if cores else "int"
    if core in ("void", "float", "_Bool", "bool") and (signs or count["short"] or count["long"]):
        raise CSyntaxError(f"{text!r} is not a C type")
    if core == "void":
        return None
    if core in ("_Bool", "bool"):
        return ("uint", 1, "bool")
    if core == "float":
        return ("float", 4, "float32")
    if core == "double":
        if signs or count["short"] or count["long"] > 1:
            raise CSyntaxError(f"{text!r} is not a C type")
        if count["long"]:
            raise UnknownType(f"{text!r} has no fixed size across devices (not supported as a kernel parameter)")
        return ("float", 8, "float64")
    unsigned = bool(count["unsigned"])
    if core == "char":
        if count["short"] or count["long"]:
            raise CSyntaxError(f"{text!r} is not a C type")
        size = 1  # plain char is signed on the x86-64 and GPU ABIs
    elif count["short"]:
        if count["long"]:
            raise CSyntaxError(f"{text!r} is not a C type")
        size = 2
    elif count["long"] == 2:
        size = 8
    elif count["long"] == 1:
        size = LONG_SIZE
    else:
        size = 4
    kind = "uint" if unsigned else "int"
    return (kind, size, f"{kind}{size * 8}")


def parse_param(text: str) -> CParam:
    """One C parameter declaration (name optional)."""
    tokens = _tokens(text)
    if not tokens:
        raise CSyntaxError("an empty parameter")
    i = 0
    words: list[str] = []
    typedef: tuple[str, int, str] | None = None
    tagged = ""
    const = False
    while i < len(tokens):
        token = tokens[i]
        if token in _QUALIFIERS:
            const = const or token.startswith("__const") or token == "const"
        elif token in _BASE_WORDS:
            if typedef is not None or tagged:
                raise CSyntaxError(f"{token!r} after a complete type")
            words.append(token)
        elif token in _TAGS:
            if words or typedef is not None or tagged or i + 1 >= len(tokens) or not _is_identifier(tokens[i + 1]):
                raise CSyntaxError(f"{token!r} must be followed by a tag name")
            tagged = f"{token} {tokens[i + 1]}"
            i += 1
        elif _is_identifier(token) and not words and typedef is None and not tagged:
            if token not in TYPEDEFS:
                raise UnknownType(f"unknown type {token!r}")
            typedef = TYPEDEFS[token]
        else:
            break
        i += 1
    if not words and typedef is None and not tagged:
        raise CSyntaxError(f"expected a type before {tokens[i]!r}" if i < len(tokens) else "expected a type")
    pointers = 0
    while i < len(tokens) and (tokens[i] == "*" or tokens[i] in _QUALIFIERS):
        pointers += tokens[i] == "*"
        i += 1
    name = ""
    if i < len(tokens) and _is_identifier(tokens[i]) and tokens[i] not in _BASE_WORDS and tokens[i] not in _TAGS:
        name = tokens[i]
        i += 1
    if i < len(tokens) and tokens[i] == "[":
        i += 1
        if i < len(tokens) and tokens[i].isdigit():
            i += 1
        if i >= len(tokens) or tokens[i] != "]":
            raise CSyntaxError("an unclosed '['")
        pointers += 1
        i += 1
    if i < len(tokens):
        raise CSyntaxError(f"unexpected {tokens[i]!r}")
    base = typedef if typedef is not None else None if tagged else _base_type(words)
    if pointers == 0:
        if tagged.startswith("enum"):
            return CParam(name, "int", 4)
        if base is None:
            what = tagged or "void"
            raise UnknownType(f"a {what} parameter passed by value has no known layout (declare its bytes, or pass a pointer)")
        return CParam(name, base[0], base[1])
    element = base[2] if pointers == 1 and base is not None else None
    return CParam(name, "pointer", POINTER_SIZE, element, const and pointers == 1)


def _is_identifier(token: str) -> bool:
    return bool(token) and (token[0].isalpha() or token[0] == "_")


def parse_signature(signature: str) -> list[tuple[str, CParam]]:
    """Every parameter of a comma-separated list, with its text (``"void"`` alone: none)."""
    if not signature.strip() or signature.strip() == "void":
        return []
    entries = signature.split(",")
    out = []
    for index, entry in enumerate(entries):
        try:
            out.append((entry.strip(), parse_param(entry)))
        except CSyntaxError as error:
            raise CSyntaxError(f"syntax error in parameter #{index} {entry.strip()!r}: {error}") from None
        except UnknownType as error:
            raise UnknownType(f"parameter #{index} {entry.strip()!r}: {error}") from None
    return out
