"""Argument packing: Python values into a kernel's packed argument buffer, by its parameter layout.

A ``Packer`` is compiled once per kernel from its ``KernelParam`` list (reported by the backend or
declared in Python) into one ``struct.Struct`` with explicit padding and one converter per
parameter. Every mismatch (count, type, range, size) is an ``OffloadError`` naming the kernel and
the parameter; nothing reaches the device. Declared signatures are laid out by ``_signature``,
the converters are ``_converters``'.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from .._api.flat import olLaunchKernel
from .._api.sessions import session_cell
from .._values.types import KernelParam
from ._array import Array
from ._buffer import Buffer
from ._converters import (
    bytes_converter, element_dtype, fail, float_converter, int_converter, param_label, pointer_converter, short,
)
from ._records import STAMPS
from ._signature import Pointee

# the struct code of each parameter kind and size ("=": standard sizes, no alignment)
_CODES = {
    (kind, struct.calcsize("=" + code)): code
    for kind, codes in (("int", "bhiq"), ("uint", "BHIQ"), ("float", "efd"), ("pointer", "IQ"))
    for code in codes
}


def _remembered(params: Sequence[KernelParam], names: Sequence[str], *, float_zero: bool) -> str:
    """Generated source: whether a call's arguments (``names``) may be remembered, each of a
    class whose value cannot change unseen: Buffers and Arrays for pointers (never an int address:
    it is checked against the device's memory at every launch, and memory freed through the flat
    API leaves no trace a remembered call could see), ints and floats for floats (a float 0.0 only
    with ``float_zero``: a remembered call compared by ``==`` would take -0.0 for it), ints for
    integers."""
    pointer = "({a}.__class__ is _Buffer or {a}.__class__ is _Array)"
    floating = "({a}.__class__ is float" + ("" if float_zero else " and {a} != 0.0") + " or {a}.__class__ is int)"
    tests = {"pointer": pointer, "float": floating}
    return " and ".join(tests.get(p.kind, "{a}.__class__ is int").format(a=a) for p, a in zip(params, names))


class Packer:
    """Packs one kernel's arguments; compiled once from its parameter layout."""

    __slots__ = (
        "kernel", "params", "pointees", "size", "fast_pack", "_struct", "_converters", "_codes", "_labels", "_elements"
    )

    def __init__(
        self, kernel: str, params: Sequence[KernelParam], pointees: Sequence[Pointee | None] = (), device: Any = None
    ) -> None:
        """``device``: the flat handle of the kernel's device, against whose memory an integer
        passed for a pointer is checked (None: not checked)."""
        self.kernel = kernel
        self.params = tuple(params)
        self.pointees = tuple(pointees) + (None,) * (len(self.params) - len(pointees))
        elements: list[Any] = []
        converters: list[Callable[[Any], Any]] = []
        codes, labels = [], []
        for index, param in enumerate(self.params):
            label = param_label(kernel, index, param)
            if param.kind == "bytes":
                code = f"{param.size}s"
                converters.append(bytes_converter(label, param.size))
                elements.append(None)
            else:
                found = _CODES.get((param.kind, param.size))
                if found is None:
                    raise fail(f"{label}: a {param.size}-byte {param.kind} cannot be packed")
                code = found
                pointee = self.pointees[index]
                element = pointee.element if pointee is not None and param.kind == "pointer" else None
                elements.append(None if element is None else element_dtype(element))
                if param.kind == "pointer":
                    converters.append(pointer_converter(label, pointee, device))
                elif param.kind == "float":
                    converters.append(float_converter(label))
                else:
                    converters.append(int_converter(label))
            codes.append(code)
            labels.append(label)
        fmt, position = "=", 0
        for index, param in sorted(enumerate(self.params), key=lambda item: item[1].offset):
            if param.offset < position:
                raise fail(f"{labels[index]} at offset {param.offset} overlaps the parameter before it (ends at {position})")
            if param.offset > position:
                fmt += f"{param.offset - position}x"
            fmt += codes[index]
            position = param.offset + param.size
        in_order = all(a.offset < b.offset for a, b in zip(self.params, self.params[1:]))
        self.size = position
        self._converters = tuple(converters)
        self._elements = tuple(elements)
        self._codes = tuple(codes)
        self._labels = tuple(labels)
        self._struct = struct.Struct(fmt) if in_order else None
        self.fast_pack: Callable[[tuple[Any, ...]], bytes | None] = self.pack  # until compile_launcher

    def compile_launcher(self, device: Any, kernel: Any) -> Callable[[Any, tuple[Any, ...], Any], bytes | None]:
        """``launcher(queue, args, sizes)``: pack ``args`` and ``olLaunchKernel`` in one frame
        (and ``self.fast_pack(args)``: the same packing alone). The launcher returns the packed
        buffer when the call may be remembered by identity and value (``memo_positions``: every
        pointer a Buffer or Array, every scalar an exact ``int`` or a non-zero ``float``), else None.

        Each parameter's common case is inlined (a Buffer or Array of the live session, of the
        declared element type; a Python int or float). A wrong argument count raises
        ``ValueError`` and a value out of range ``struct.error`` or ``OverflowError`` before
        anything is launched; the caller then calls ``pack`` for the error naming the parameter.
        """
        namespace: dict[str, Any] = {
            "_launch": olLaunchKernel,
            "_device": device,
            "_kernel": kernel,
            "_Buffer": Buffer,
            "_Array": Array,
            "_pack_slow": self.pack,
            "_state": session_cell(),
        }
        names = [f"a{i}" for i in range(len(self.params))]
        if self._struct is None:  # parameters not in offset order: the general packer
            packed = "_pack_slow(args)"
            unpack = ""
        elif not names:
            packed = "None"
            unpack = "    if args:\n        raise ValueError\n"
        else:
            namespace["_pack"] = self._struct.pack
            namespace.update({f"_c{i}": c for i, c in enumerate(self._converters)})
            namespace.update({f"_e{i}": e for i, e in enumerate(self._elements)})
            values = []
            for i, (param, a) in enumerate(zip(self.params, names)):
                if param.kind == "pointer":
                    # the slow converter takes a closed buffer (address 0), one of another session
                    # (imported memory has none), another dtype and read-only memory, and names the error
                    typed = f"{a}._dtype is _e{i} and " if self._elements[i] is not None else ""
                    values.append(
                        f"(((b{i} := {a}._buffer)._ctx is _state.ctx and {typed}(p{i} := b{i}._address) "
                        f"and p{i} + {a}._offset or _c{i}({a})) "
                        f"if {a}.__class__ is _Array else ({a}._ctx is _state.ctx and {a}._address or _c{i}({a})) "
                        f"if {a}.__class__ is _Buffer else _c{i}({a}))"
                    )
                elif param.kind == "float":
                    values.append(f"({a} if {a}.__class__ is float else _c{i}({a}))")
                elif param.kind in ("int", "uint"):
                    values.append(f"({a} if {a}.__class__ is int else _c{i}({a}))")
                else:
                    values.append(f"_c{i}({a})")
            unpack = f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args\n"
            packed = f"_pack({', '.join(values)})"
        source = f"def pack(args):\n{unpack}    return {packed}\n\n"
        if self._struct is not None and names and all(p.kind != "bytes" for p in self.params):
            source += self._cached_launcher_source(names, unpack, packed, namespace)
        else:
            source += f"def launcher(queue, args, sizes):\n{unpack}    _launch(queue, _device, _kernel, {packed}, sizes)\n"
        exec(compile(source, f"<offload launcher of {self.kernel}>", "exec"), namespace)
        self.fast_pack = namespace["pack"]
        launcher: Callable[[Any, tuple[Any, ...], Any], bytes | None] = namespace["launcher"]
        return launcher

    def memo_positions(self) -> tuple[int, int] | None:
        """Where a remembered call's scalars are (two positions, the one repeated, or the first
        parameter twice when there is none), or None when calls of this kernel are not remembered
        (no parameters, an opaque ``bytes`` one, parameters out of offset order, more than two
        scalars): a caller comparing a remembered argument tuple with ``==`` checks the class of
        the arguments at these positions, since values equal across types (``1 == 1.0``) do not
        pack alike."""
        if self._struct is None or not self.params or any(p.kind == "bytes" for p in self.params):
            return None
        scalars = [i for i, p in enumerate(self.params) if p.kind != "pointer"]
        if len(scalars) > 2:
            return None
        scalars = (scalars + scalars + [0, 0])[:2]
        return scalars[0], scalars[1]

    def _cached_launcher_source(self, names: list[str], unpack: str, packed: str, namespace: dict[str, Any]) -> str:
        """The launcher of a kernel whose calls are remembered: by the caller (``memo_positions``,
        ``Kernel._memo``), to which it returns the packed buffer when every pointer is a Buffer or
        Array and every scalar an ``int`` or non-zero ``float`` (0.0 == -0.0 packs apart); else by
        itself, reusing the last argument buffer when called with the very same objects.

        A call is remembered here only when every scalar is a Python ``int`` or ``float``
        (immutable) and every pointer a ``Buffer`` or ``Array`` (whose address changes only by
        ``close()``, which bumps ``STAMPS.closes``). The memory is one tuple, replaced whole (threads launching at once never
        mix two calls); the kernel keeps its last arguments alive until its next different call.
        """
        if self.memo_positions() is not None:
            inline = _remembered(self.params, names, float_zero=False)
            return (
                "def launcher(queue, args, sizes):\n"
                f"{unpack}"
                f"    data = {packed}\n"
                "    _launch(queue, _device, _kernel, data, sizes)\n"
                f"    if {inline}:\n"
                "        return data\n"
            )
        namespace["_stamps"] = STAMPS
        namespace["_last"] = [(None,) * (len(names) + 2)]
        same = " and ".join(f"{a} is last[{i + 2}]" for i, a in enumerate(names))
        plain = _remembered(self.params, names, float_zero=True)
        return (
            "def launcher(queue, args, sizes):\n"
            f"{unpack}"
            "    last = _last[0]\n"
            f"    if {same} and last[0] == _stamps.closes:\n"
            "        _launch(queue, _device, _kernel, last[1], sizes)\n"
            "        return\n"
            "    closes = _stamps.closes\n"
            f"    data = {packed}\n"
            f"    if {plain}:\n"
            f"        _last[0] = (closes, data, {', '.join(names)})\n"
            "    _launch(queue, _device, _kernel, data, sizes)\n"
        )

    def pack(self, args: Sequence[Any]) -> bytes | None:
        """The argument buffer for ``args`` (None for a kernel without parameters)."""
        converters = self._converters
        if len(args) != len(converters):
            names = ", ".join(p.name or f"#{i}" for i, p in enumerate(self.params))
            raise fail(f"kernel {self.kernel!r} takes {len(converters)} arguments ({names}), got {len(args)}")
        if not converters:
            return None
        values = [convert(value) for convert, value in zip(converters, args)]
        try:
            if self._struct is not None:
                return self._struct.pack(*values)
            return self._pack_unordered(values)
        except (struct.error, OverflowError):
            self._diagnose(values, args)
            raise

    def _pack_unordered(self, values: list[Any]) -> bytes:
        out = bytearray(self.size)
        for param, code, value in zip(self.params, self._codes, values):
            struct.pack_into("=" + code, out, param.offset, value)
        return bytes(out)

    def _diagnose(self, values: list[Any], args: Sequence[Any]) -> None:
        for code, label, value, arg in zip(self._codes, self._labels, values, args):
            try:
                struct.pack("=" + code, value)
            except (struct.error, OverflowError):
                raise fail(f"{label}: {short(arg)} is out of range") from None
