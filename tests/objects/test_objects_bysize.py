"""Kernels whose backend reports only parameter offsets and sizes (CUDA's cuFuncGetParamInfo),
launched without a declared signature (issue 32): a pointer-sized parameter given a Buffer or an
Array packs as a pointer, and such calls are remembered as a declared kernel's are (the same
objects launch again without repacking); other classes keep the opaque packing."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np
import pytest

import offload
import offload_host
from offload import KernelParam, OffloadError
from offload.objects._program import NO_MEMO

from objects_backends import ReportingHostBackend
from objects_support import relaunched, release_library

SOURCE = (
    "#include <offload_host.h>\n#include <stdint.h>\n"
    "struct a { const uint64_t *src; uint64_t *dst; };\n"
    "OFFLOAD_KERNEL(move) { const struct a *q = OFFLOAD_ARGS(struct a); q->dst[0] = q->src[0] + 1; }\n"
)
OPAQUE = [KernelParam(0, 8, "bytes", ""), KernelParam(8, 8, "bytes", "")]
# the same kernel known half: an opaque source, a destination known to point to uint64 elements
HALF = [KernelParam(0, 8, "bytes", ""), KernelParam(8, 8, "pointer", "dst", element="uint64")]


@pytest.fixture
def reporting() -> Iterator[offload.objects.Device]:
    """A backend reporting the ``move`` kernel's layout as offsets and sizes only (``half``: its
    second parameter typed)."""
    offload.register_backend("reporting", lambda: ReportingHostBackend({"move": OPAQUE, "half": HALF}))
    try:
        yield offload.devices("reporting")[0]
    finally:
        release_library()
        offload.unregister_backend("reporting")


@pytest.mark.parametrize("on_queue", [False, True])
def test_buffers_and_arrays_launch_remembered(reporting: offload.objects.Device, on_queue: bool) -> None:
    with reporting.load_program(offload_host.build_program(SOURCE, name="move")) as program, reporting.queue() as queue:
        move = program.kernel("move")
        assert move.params == tuple(OPAQUE)
        src = offload.to_device(np.array([41], np.uint64), reporting)
        dst = offload.zeros(1, np.uint64, reporting)
        before = relaunched()
        for _ in range(3):
            if on_queue:
                queue.launch(move, 1, 1, src, dst.buffer)
            else:
                move.launch(1, 1, src, dst.buffer)
        queue.sync()
        assert move._memo is not NO_MEMO and move._memo.args == (src, dst.buffer)  # remembered
        assert dst.item() == 42
        assert relaunched() - before in (0, 2)  # the compiled path relaunched the last two (where it is on)
        move.launch(1, 1, dst, src)  # the other way round: another remembered call
        assert src.item() == 43 and move._memo_previous.args == (src, dst.buffer)


def test_other_classes_keep_the_opaque_packing(reporting: offload.objects.Device) -> None:
    with reporting.load_program(offload_host.build_program(SOURCE, name="move")) as program:
        move = program.kernel("move")
        src = offload.to_device(np.array([9], np.uint64), reporting)
        out = offload.Buffer(8, reporting)
        move.launch(1, 1, np.uint64(src.address), out)  # an address as 8 bytes: packed, never remembered
        assert struct.unpack("=Q", out.to_bytes())[0] == 10 and move._memo is NO_MEMO
        with pytest.raises(OffloadError, match=r"parameter #0 \(bytes\): expects 8 bytes .*got float"):
            move.launch(1, 1, 1.5, out)
        with pytest.raises(OffloadError, match=r"takes 2 arguments"):
            move.launch(1, 1, src)
        move.launch(1, 1, src, out)
        out.close()  # closed since the remembered call: refused, naming the parameter
        with pytest.raises(OffloadError, match=r"parameter #1 .*closed"):
            move.launch(1, 1, src, out)


def test_typed_parameters_beside_opaque_ones_keep_their_checks(reporting: offload.objects.Device) -> None:
    half = SOURCE.replace("OFFLOAD_KERNEL(move)", "OFFLOAD_KERNEL(half)")
    with reporting.load_program(offload_host.build_program(half, name="half")) as program:
        kernel = program.kernel("half")
        src = offload.to_device(np.array([1], np.uint64), reporting)
        for _ in range(2):
            kernel.launch(1, 1, src, offload.zeros(1, np.uint64, reporting))
        dst = offload.zeros(1, np.uint64, reporting)
        kernel.launch(1, 1, src, dst)
        assert dst.item() == 2
        with pytest.raises(OffloadError, match=r"got an Array of float64, the kernel takes uint64 elements"):
            kernel.launch(1, 1, src, offload.zeros(1, np.float64, reporting))
