"""Programs and kernels: loading, unloading, and argument packing by the kernel's parameter layout
(reported by the backend's kernel_params hook, or declared in Python) for every scalar type and
mixed layouts with padding; mismatches raise OffloadError naming the parameter."""

from __future__ import annotations

import gc
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import offload
import offload_host
from offload import ErrorCode, KernelParam, OffloadError
from offload._core.session import STATE

from objects_backends import ReportingHostBackend
from objects_support import SAXPY_SIGNATURE, release_library

class Address(int):
    """An address the echo kernel only copies, never dereferences: a pointer by ``__offload_ptr__``
    (a plain int for a pointer must be memory the device reaches, test_objects_mistakes.py)."""

    @property
    def __offload_ptr__(self) -> int:
        return int(self)


# Every scalar type, ordered so that the C compiler pads between them; the kernel copies each
# field into its own 8-byte slot of `out`, so the test sees exactly the bytes the kernel got.
ECHO_FIELDS = [
    ("int8_t", "i8", "b", -7),
    ("double", "f64", "d", np.float64(2.5)),
    ("uint8_t", "u8", "B", np.uint8(250)),
    ("int64_t", "i64", "q", -(2**62)),
    ("int16_t", "i16", "h", np.int16(-30000)),
    ("const void *", "ptr", "Q", Address(0xDEADBEEF)),
    ("uint16_t", "u16", "H", 65535),
    ("float", "f32", "f", 1.25),
    ("char", "c", "b", True),
    ("int32_t", "i32", "i", np.int32(-(2**31))),
    ("_Float16", "f16", "e", np.float16(0.5)),
    ("uint32_t", "u32", "I", 2**32 - 1),
    ("uint64_t", "u64", "Q", np.uint64(2**64 - 1)),
]
ECHO_SOURCE = (
    "#include <offload_host.h>\n#include <string.h>\n"
    "struct echo_args {\n"
    + "".join(f"  {ctype} {name};\n" for ctype, name, _, _ in ECHO_FIELDS)
    + "  unsigned char *out;\n};\n"
    "OFFLOAD_KERNEL(echo) {\n  const struct echo_args *p = OFFLOAD_ARGS(struct echo_args);\n"
    + "".join(f"  memcpy(p->out + {8 * i}, &p->{name}, sizeof p->{name});\n" for i, (_, name, _, _) in enumerate(ECHO_FIELDS))
    + "}\n"
    "struct pair { int32_t a, b; };\n"
    "struct by_value_args { char tag; struct pair p; int32_t *out; };\n"
    "OFFLOAD_KERNEL(by_value) {\n  const struct by_value_args *q = OFFLOAD_ARGS(struct by_value_args);\n"
    "  q->out[0] = q->p.a * 10 + q->p.b + q->tag * 1000;\n}\n"
)
ECHO_SIGNATURE = ", ".join(f"{ctype} {name}" for ctype, name, _, _ in ECHO_FIELDS) + ", unsigned char *out"
SAXPY_PARAMS = [
    KernelParam(0, 4, "float", "a"),
    KernelParam(8, 8, "pointer", "x"),
    KernelParam(16, 8, "pointer", "y"),
    KernelParam(24, 8, "uint", "n"),
]


@pytest.fixture(scope="module")
def echo_image() -> bytes:
    return offload_host.build_program(ECHO_SOURCE, name="echo")


def _expected_slots() -> bytes:
    return b"".join(struct.pack("=" + code, value).ljust(8, b"\0") for _, _, code, value in ECHO_FIELDS)


def test_every_scalar_type_reaches_the_kernel(host: offload.objects.Device, echo_image: bytes) -> None:
    with host.load_program(echo_image) as program, host.alloc(8 * len(ECHO_FIELDS)) as out:
        out.fill(b"\0")
        kernel = program.kernel("echo", ECHO_SIGNATURE)
        assert [p.name for p in kernel.params or ()][:3] == ["i8", "f64", "u8"]
        assert [p.offset for p in kernel.params or ()][:4] == [0, 8, 16, 24]  # padding as C lays it out
        kernel.launch(1, 1, *[value for _, _, _, value in ECHO_FIELDS], out)
        assert out.to_bytes() == _expected_slots()


def test_declared_as_types_dtypes_and_pairs(host: offload.objects.Device, echo_image: bytes) -> None:
    spellings = [
        [ctype for ctype, _, _, _ in ECHO_FIELDS] + ["pointer"],
        [np.dtype("=" + code) if code not in "Q" or name != "ptr" else "ptr" for _, name, code, _ in ECHO_FIELDS] + ["ptr"],
        [(name, ctype) for ctype, name, _, _ in ECHO_FIELDS] + [("out", "void*")],
    ]
    with host.load_program(echo_image) as program, host.alloc(8 * len(ECHO_FIELDS)) as out:
        for spelling in spellings:
            out.fill(b"\0")
            kernel = program.kernel("echo", spelling)
            kernel.launch(1, 1, *[value for _, _, _, value in ECHO_FIELDS], out)
            assert out.to_bytes() == _expected_slots(), spelling


def test_aggregate_by_value_with_explicit_layout(host: offload.objects.Device, echo_image: bytes) -> None:
    layout = [KernelParam(0, 1, "int", "tag"), KernelParam(4, 8, "bytes", "p"), KernelParam(16, 8, "pointer", "out")]
    pair = np.array((3, 4), dtype=[("a", "<i4"), ("b", "<i4")])
    with host.load_program(echo_image) as program, host.alloc(4) as out:
        kernel = program.kernel("by_value", layout)
        kernel.launch(1, 1, 2, struct.pack("=ii", 3, 4), out)
        assert struct.unpack("=i", out.to_bytes())[0] == 2034
        kernel.launch(1, 1, 1, pair, out)  # a numpy structured scalar is bytes-like too
        assert struct.unpack("=i", out.to_bytes())[0] == 1034
        with pytest.raises(OffloadError, match=r"parameter 'p' .*expects 8 bytes, got 4"):
            kernel.launch(1, 1, 1, b"1234", out)
        unordered = program.kernel("by_value", [layout[1], layout[0], layout[2]])  # arguments follow the list
        unordered.launch(1, 1, struct.pack("=ii", 5, 6), 1, out)
        assert struct.unpack("=i", out.to_bytes())[0] == 1056


def test_saxpy_with_numpy_through_the_objects(host: offload.objects.Device, saxpy_image: bytes) -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    with host.load_program(saxpy_image) as program, host.queue() as queue:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        dx = offload.to_device(x, host, queue=queue)
        dy = offload.to_device(y, host, queue=queue)
        queue.launch(saxpy, (n + 127) // 128, 128, np.float32(3), dx, dy, np.uint64(n))
        result = dy.to_numpy(queue=queue)
    np.testing.assert_allclose(result, 3 * x + 1)


def test_program_from_path_and_unloading(host: offload.objects.Device, saxpy_image: bytes, tmp_path: Path) -> None:
    path = tmp_path / "saxpy.so"
    path.write_bytes(saxpy_image)
    with host.load_program(path) as program:
        handle = program.handle
        kernel = program.kernel("saxpy", SAXPY_SIGNATURE)
        assert program.kernel("saxpy", SAXPY_SIGNATURE) is kernel
        assert kernel.name == "saxpy" and kernel.program is program and "saxpy" in repr(kernel)
    assert program.closed and handle._ctx is None
    with pytest.raises(OffloadError) as info:
        host.load_program(tmp_path / "missing.so")
    assert info.value.code is ErrorCode.HOST_IO
    with pytest.raises(OffloadError) as info:
        host.load_program(b"not an image")
    assert info.value.code is ErrorCode.INVALID_BINARY


def test_global_variable_as_a_buffer(host: offload.objects.Device) -> None:
    with host.load_program(offload_host.build_test_kernel("global")) as program:
        program.kernel("write").launch(1, 64)
        values = program.global_variable("global")
        assert values.size == 256 and not values.owns_memory
        np.testing.assert_array_equal(values.view(np.uint32).to_numpy(), np.arange(64) * 2)


def test_gc_never_unloads_a_program_a_queue_may_still_run(host: offload.objects.Device, saxpy_image: bytes) -> None:
    gate = threading.Event()
    queue = host.queue()
    program = host.load_program(saxpy_image)
    handle = program.handle
    y = offload.to_device(np.zeros(64, np.float32), host)
    queue.host_function(gate.wait, 5)
    queue.launch(program.kernel("saxpy", SAXPY_SIGNATURE), 1, 64, 1.0, y, y, 64)
    del program
    gc.collect()
    assert handle._ctx is not None  # the queue's pending launch holds the kernel, and so the program
    gate.set()
    queue.sync()
    gc.collect()
    assert handle._ctx is None
    queue.close()


def test_grids_and_blocks(host: offload.objects.Device) -> None:
    with host.load_program(offload_host.build_test_kernel("noargs")) as program:
        kernel = program.kernel("noargs")
        assert kernel.params in (None, ()) and kernel.pack() is None
        for grid, block in ((1, 1), ((2, 2), 4), ((1, 2, 3), (3, 2, 1)), (np.int64(2), [4])):
            kernel.launch(grid, block)
        size = kernel.launch_size((2, 3), 4, 16)
        assert (size.dimensions, tuple(size.num_groups), tuple(size.group_size), size.dyn_shared_memory) == (2, (2, 3, 1), (4, 1, 1), 16)
        assert kernel.launch_size((2, 3), 4, 16) is size  # cached
        for grid in ((), (1, 2, 3, 4), 1.5, "x"):
            with pytest.raises(OffloadError, match="grid"):
                kernel.launch(grid, 1)
        with pytest.raises(OffloadError) as info:
            kernel.launch(0, 1)
        assert info.value.code is ErrorCode.INVALID_SIZE


# --- mismatches ----------------------------------------------------------------------------------


@pytest.fixture
def saxpy(host: offload.objects.Device, saxpy_image: bytes) -> Iterator[offload.Kernel]:
    with host.load_program(saxpy_image) as program:
        yield program.kernel("saxpy", SAXPY_SIGNATURE)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.0, 0, 0), r"takes 4 arguments \(a, x, y, n\), got 3"),
        (("2", 0, 0, 1), r"parameter 'a' \(float32\): expects a number, got str"),
        ((np.ones(2), 0, 0, 1), r"parameter 'a' \(float32\): expects a number"),
        ((1.0, 1.5, 0, 1), r"parameter 'x' \(pointer64\): expects a Buffer, Array or int address, got float"),
        ((1.0, np.zeros(4, np.float32), 0, 1), r"parameter 'x' .*got a ndarray; pass an offload Buffer or Array"),
        ((1.0, 0, "y", 1), r"parameter 'y' .*got str"),
        ((1.0, 0, 0, 2.0), r"parameter 'n' \(uint64\): expects an integer, got float"),
        ((1.0, 0, 0, -1), r"parameter 'n' \(uint64\): -1 is out of range"),
        ((1.0, 0, 0, 2**64), r"parameter 'n' \(uint64\): 18446744073709551616 is out of range"),
        ((1.0, -5, 0, 1), r"parameter 'x' \(pointer64\): -5 is out of range"),
    ],
)
def test_mismatches_name_the_parameter(saxpy: offload.Kernel, args: tuple[object, ...], message: str) -> None:
    with pytest.raises(OffloadError, match=message) as info:
        saxpy.launch(1, 1, *args)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_closed_buffer_argument(saxpy: offload.Kernel, host: offload.objects.Device) -> None:
    buffer = host.alloc(16)
    buffer.close()
    with pytest.raises(OffloadError, match="closed"):
        saxpy.launch(1, 1, 1.0, buffer, buffer, 4)


def test_no_layout_takes_no_arguments(host: offload.objects.Device, echo_image: bytes) -> None:
    with host.load_program(echo_image) as program:  # its kernels declare no parameters in C
        kernel = program.kernel("echo")
        assert kernel.params is None
        with pytest.raises(OffloadError, match=r"does not report its parameters; declare them"):
            kernel.launch(1, 1, 1.0)


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        ("float a, quaternion q", r"parameter #1 'quaternion q': unknown type 'quaternion'"),
        ([KernelParam(0, 8, "pointer"), KernelParam(4, 4, "int")], r"overlaps"),
        ([KernelParam(0, 3, "int", "odd")], r"'odd' \(int24\): a 3-byte int cannot be packed"),
        ([KernelParam(0, 4, "complex", "z")], r"malformed"),
        ([(1, 2)], r"unknown parameter type 2"),
    ],
)
def test_bad_signatures_are_named(host: offload.objects.Device, echo_image: bytes, signature: object, message: str) -> None:
    with host.load_program(echo_image) as program:
        with pytest.raises(OffloadError, match=message) as info:
            program.kernel("echo", signature)  # type: ignore[arg-type]
        assert info.value.code is ErrorCode.INVALID_ARGUMENT


# --- layouts reported by the backend (the kernel_params hook) --------------------------------


@pytest.fixture
def reporting(request: pytest.FixtureRequest) -> Iterator[offload.objects.Device]:
    """A backend reporting kernel layouts (from the test's ``layouts`` marker)."""
    marker = request.node.get_closest_marker("layouts")
    offload.register_backend("reporting", lambda: ReportingHostBackend(marker.args[0] if marker else {}))
    try:
        yield offload.devices("reporting")[0]
    finally:
        release_library()
        offload.unregister_backend("reporting")


@pytest.mark.layouts({"saxpy": SAXPY_PARAMS})
def test_reported_layout_packs_without_a_signature(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    x = np.arange(100, dtype=np.float32)
    with reporting.load_program(saxpy_image) as program, reporting.queue() as queue:
        saxpy = program.kernel("saxpy")
        assert saxpy.params == tuple(SAXPY_PARAMS)
        dx = offload.to_device(x, reporting)
        dy = offload.to_device(np.zeros(100, np.float32), reporting)
        queue.launch(saxpy, 1, 100, 2, dx, dy, 100)  # an int for a float parameter is fine
        queue.sync()
        np.testing.assert_array_equal(dy.to_numpy(), 2 * x)
        assert program.kernel("saxpy", SAXPY_SIGNATURE).params == tuple(SAXPY_PARAMS)  # agreeing declaration
        with pytest.raises(OffloadError, match=r"parameter 'n' \(uint64\): expects an integer"):
            saxpy.launch(1, 1, 1.0, dx, dy, "many")


@pytest.mark.layouts({"saxpy": SAXPY_PARAMS})
def test_declared_signature_disagreeing_with_the_backend(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    with reporting.load_program(saxpy_image) as program:
        with pytest.raises(OffloadError, match=r"parameter 'n': declared uint32 at offset 24, the backend reports uint64"):
            program.kernel("saxpy", "float a, float *x, float *y, uint32_t n")
        with pytest.raises(OffloadError, match=r"declared signature has 3 parameters, the backend reports 4"):
            program.kernel("saxpy", "float a, float *x, float *y")


@pytest.mark.layouts({"saxpy": [KernelParam(0, 4, "float", "a"), (8, 8, "vector", "x")]})
def test_malformed_reported_layout(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    with reporting.load_program(saxpy_image) as program:
        with pytest.raises(OffloadError, match=r"reporting: kernel_params of 'saxpy': parameter #1 .* is malformed"):
            program.kernel("saxpy")


@pytest.mark.layouts({"saxpy": RuntimeError("metadata unreadable")})
def test_failing_kernel_params_hook(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    with reporting.load_program(saxpy_image) as program:
        with pytest.raises(OffloadError, match="metadata unreadable") as info:
            program.kernel("saxpy")
        assert info.value.code is ErrorCode.UNKNOWN


@pytest.mark.layouts({"saxpy": None})
def test_backend_that_cannot_tell_falls_back_to_the_declaration(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    with reporting.load_program(saxpy_image) as program:
        assert program.kernel("saxpy").params is None
        assert program.kernel("saxpy", SAXPY_SIGNATURE).params == tuple(SAXPY_PARAMS)


def test_nothing_left_after_the_layer_releases(host: offload.objects.Device, saxpy_image: bytes) -> None:
    program = host.load_program(saxpy_image)
    program.kernel("saxpy", SAXPY_SIGNATURE).launch(1, 1, 1.0, 0, 0, 0)  # n = 0: touches nothing
    assert STATE.ctx is not None
    del program
    gc.collect()
    assert not any(d.programs for d in STATE.ctx.devices)


# Offsets and sizes only, as CUDA's cuFuncGetParamInfo reports them.
SAXPY_OPAQUE = [KernelParam(p.offset, p.size, "bytes", "") for p in SAXPY_PARAMS]


@pytest.mark.layouts({"saxpy": SAXPY_OPAQUE})
def test_opaque_reported_layout_takes_sized_values(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    x = np.arange(64, dtype=np.float32)
    with reporting.load_program(saxpy_image) as program:
        saxpy = program.kernel("saxpy")
        dx, dy = offload.to_device(x, reporting), offload.to_device(np.zeros(64, np.float32), reporting)
        saxpy.launch(1, 64, np.float32(3), dx, dy.buffer, np.uint64(64))  # numpy scalars carry their size
        np.testing.assert_array_equal(dy.to_numpy(), 3 * x)
        with pytest.raises(OffloadError, match=r"parameter #0 \(bytes\): expects 4 bytes .*got float; its type is not known"):
            saxpy.launch(1, 64, 3.0, dx, dy, np.uint64(64))
        with pytest.raises(OffloadError, match=r"parameter #3 \(bytes\): expects 8 bytes, got 4"):
            saxpy.launch(1, 64, np.float32(3), dx, dy, np.uint32(64))


@pytest.mark.layouts({"saxpy": SAXPY_OPAQUE})
def test_declared_signature_refines_an_opaque_layout(reporting: offload.objects.Device, saxpy_image: bytes) -> None:
    x = np.arange(64, dtype=np.float32)
    with reporting.load_program(saxpy_image) as program:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        assert saxpy.params == tuple(SAXPY_PARAMS)  # the declared kinds and names
        dx, dy = offload.to_device(x, reporting), offload.to_device(np.ones(64, np.float32), reporting)
        saxpy.launch(1, 64, 2.0, dx, dy, 64)  # plain Python values, as with a typed layout
        np.testing.assert_array_equal(dy.to_numpy(), 2 * x + 1)
        with pytest.raises(OffloadError, match=r"parameter 'n': declared uint32 at offset 24, the backend reports bytes64"):
            program.kernel("saxpy", "float a, float *x, float *y, uint32_t n")


# --- the remembered argument buffer (the very same objects launch without repacking) -----------


def test_same_arguments_reuse_the_buffer_until_one_is_closed(host: offload.objects.Device, saxpy_image: bytes) -> None:
    x = np.arange(64, dtype=np.float32)
    with host.load_program(saxpy_image) as program:
        saxpy = program.kernel("saxpy", SAXPY_SIGNATURE)
        dx, dy = offload.to_device(x, host), offload.to_device(np.zeros(64, np.float32), host)
        for _ in range(3):
            saxpy.launch(1, 64, 1.0, dx, dy, 64)
        np.testing.assert_array_equal(dy.to_numpy(), 3 * x)
        dy.buffer.close()
        with pytest.raises(OffloadError, match=r"parameter 'y' .*closed"):
            saxpy.launch(1, 64, 1.0, dx, dy, 64)  # the same objects, but one was closed since


def test_objects_that_may_change_are_packed_every_time(host: offload.objects.Device, echo_image: bytes) -> None:
    class Pointer:
        """A user's object whose address changes between launches."""

        def __init__(self, address: int) -> None:
            self.__offload_ptr__ = address

    layout = "void *p, unsigned char *out"
    source = (
        "#include <offload_host.h>\n#include <string.h>\n"
        "struct a { void *p; unsigned char *out; };\n"
        "OFFLOAD_KERNEL(ptr) { const struct a *q = OFFLOAD_ARGS(struct a); memcpy(q->out, &q->p, sizeof q->p); }\n"
    )
    with host.load_program(offload_host.build_program(source, name="ptr")) as program, host.alloc(8) as out:
        kernel = program.kernel("ptr", layout)
        pointer = Pointer(0x1000)
        for address in (0x1000, 0x2000, 0x3000):
            pointer.__offload_ptr__ = address
            kernel.launch(1, 1, pointer, out)
            assert struct.unpack("=Q", out.to_bytes())[0] == address
        value = np.uint64(out.address)  # numpy scalars are packed every time too (not remembered)
        kernel.launch(1, 1, value, out)
        assert struct.unpack("=Q", out.to_bytes())[0] == out.address
