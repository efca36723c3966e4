"""A strict decoder for the MessagePack subset of AMDGPU code-object metadata (no dependency).

The ``NT_AMDGPU_METADATA`` note holds one msgpack map (maps, arrays, strings, integers, floats,
booleans, nil). ``unpack`` decodes exactly one object spanning all of ``data`` and raises
``ValueError`` naming the offset on anything truncated, unknown or trailing.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["unpack"]

_MAX_DEPTH = 64


def unpack(data: bytes) -> Any:
    """Decode ``data`` (one complete msgpack object) into Python dicts, lists, str, int, ...."""
    value, end = _decode(memoryview(data), 0, 0)
    if end != len(data):
        raise ValueError(f"msgpack: {len(data) - end} trailing bytes after the object at offset {end}")
    return value


def _take(buf: memoryview, pos: int, count: int) -> tuple[memoryview, int]:
    end = pos + count
    if end > len(buf):
        raise ValueError(f"msgpack: truncated at offset {pos} (needs {count} bytes, {len(buf) - pos} left)")
    return buf[pos:end], end


def _uint(buf: memoryview, pos: int, size: int) -> tuple[int, int]:
    raw, pos = _take(buf, pos, size)
    return int.from_bytes(raw, "big"), pos


def _decode(buf: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise ValueError(f"msgpack: nesting deeper than {_MAX_DEPTH} at offset {pos}")
    head, pos = _uint(buf, pos, 1)
    if head <= 0x7F:
        return head, pos
    if head >= 0xE0:
        return head - 0x100, pos
    if 0x80 <= head <= 0x8F:
        return _map(buf, pos, head & 0x0F, depth)
    if 0x90 <= head <= 0x9F:
        return _array(buf, pos, head & 0x0F, depth)
    if 0xA0 <= head <= 0xBF:
        return _str(buf, pos, head & 0x1F)
    if head == 0xC0:
        return None, pos
    if head == 0xC2:
        return False, pos
    if head == 0xC3:
        return True, pos
    if head in (0xC4, 0xC5, 0xC6):  # bin 8/16/32
        length, pos = _uint(buf, pos, 1 << (head - 0xC4))
        raw, pos = _take(buf, pos, length)
        return bytes(raw), pos
    if head == 0xCA:
        raw, pos = _take(buf, pos, 4)
        return struct.unpack(">f", raw)[0], pos
    if head == 0xCB:
        raw, pos = _take(buf, pos, 8)
        return struct.unpack(">d", raw)[0], pos
    if 0xCC <= head <= 0xCF:  # uint 8/16/32/64
        return _uint(buf, pos, 1 << (head - 0xCC))
    if 0xD0 <= head <= 0xD3:  # int 8/16/32/64
        raw, pos = _take(buf, pos, 1 << (head - 0xD0))
        return int.from_bytes(raw, "big", signed=True), pos
    if head in (0xD9, 0xDA, 0xDB):  # str 8/16/32
        length, pos = _uint(buf, pos, 1 << (head - 0xD9))
        return _str(buf, pos, length)
    if head in (0xDC, 0xDD):  # array 16/32
        count, pos = _uint(buf, pos, 2 if head == 0xDC else 4)
        return _array(buf, pos, count, depth)
    if head in (0xDE, 0xDF):  # map 16/32
        count, pos = _uint(buf, pos, 2 if head == 0xDE else 4)
        return _map(buf, pos, count, depth)
    raise ValueError(f"msgpack: unsupported type byte {head:#04x} at offset {pos - 1}")


def _str(buf: memoryview, pos: int, length: int) -> tuple[str, int]:
    raw, end = _take(buf, pos, length)
    try:
        return str(raw, "utf-8"), end
    except UnicodeDecodeError as exc:
        raise ValueError(f"msgpack: string at offset {pos} is not UTF-8") from exc


def _array(buf: memoryview, pos: int, count: int, depth: int) -> tuple[list[Any], int]:
    items = []
    for _ in range(count):
        item, pos = _decode(buf, pos, depth + 1)
        items.append(item)
    return items, pos


def _map(buf: memoryview, pos: int, count: int, depth: int) -> tuple[dict[Any, Any], int]:
    result: dict[Any, Any] = {}
    for _ in range(count):
        key_at = pos
        key, pos = _decode(buf, pos, depth + 1)
        if isinstance(key, (dict, list)):
            raise ValueError(f"msgpack: unhashable map key at offset {key_at}")
        value, pos = _decode(buf, pos, depth + 1)
        result[key] = value
    return result, pos
