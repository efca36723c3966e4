"""Launchers of kernels whose backend reports only the offset and size of each parameter (CUDA's
``cuFuncGetParamInfo``, HIP's metadata without types): chosen by the classes of the arguments.

A pointer-sized parameter given a Buffer or an Array is a pointer (its address is what the opaque
``bytes`` packing would have written); every other argument keeps the opaque packing (a
bytes-like value of the parameter's size: a numpy scalar). So each combination of argument
classes gets a launcher compiled as for a declared signature, with the common cases inline, and a
call whose every parameter is such a pointer is remembered by the caller (``Kernel._memo``) just
as a declared kernel's is: undeclared kernels launch at the declared speed (issue 32)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._values.types import KernelParam
from ._array import Array
from ._buffer import Buffer
from ._packing import Packer
from ._signature import POINTER_SIZE, Pointee

Launcher = Callable[[Any, tuple[Any, ...], Any], bytes | None]
_LIMIT = 16  # combinations of argument classes kept per kernel (a cache, cleared when full)
_POINTERS = (Buffer, Array)


def _as_pointer(param: KernelParam) -> KernelParam:
    return KernelParam(param.offset, param.size, "pointer", param.name)


def by_classes(
    name: str, params: Sequence[KernelParam], pointees: Sequence[Pointee | None], device: Any, kernel: Any
) -> tuple[Launcher, tuple[int, int] | None]:
    """The launcher of kernel ``name`` (``launcher(queue, args, sizes)``, as ``Packer.compile_launcher``
    makes) and the memo positions (``Packer.memo_positions``) of its calls whose every opaque
    pointer-sized parameter gets a Buffer or Array (None: no call of it is remembered). The
    ``pointees`` of its typed pointers are checked by every launcher alike."""
    params = tuple(params)
    generic = Packer(name, params, pointees, device).compile_launcher(device, kernel)
    opaque = [i for i, p in enumerate(params) if p.kind == "bytes" and p.size == POINTER_SIZE]
    if not opaque:
        return generic, None
    every = tuple(_as_pointer(p) if i in opaque else p for i, p in enumerate(params))
    positions = Packer(name, every, pointees, device).memo_positions()
    count = len(params)
    launchers: dict[tuple[type, ...], Launcher] = {}

    def typed(classes: tuple[type, ...]) -> Launcher:
        chosen = tuple(_as_pointer(p) if i in opaque and classes[i] in _POINTERS else p for i, p in enumerate(params))
        found = generic if chosen == params else Packer(name, chosen, pointees, device).compile_launcher(device, kernel)
        if len(launchers) >= _LIMIT:
            launchers.clear()
        launchers[classes] = found
        return found

    def launcher(queue: Any, args: tuple[Any, ...], sizes: Any) -> bytes | None:
        classes = tuple(map(type, args))
        found = launchers.get(classes)
        if found is None:
            found = generic if len(args) != count else typed(classes)  # (a wrong count: the generic one raises)
        return found(queue, args, sizes)

    return launcher, positions
