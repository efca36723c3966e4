"""Declared kernel signatures are parsed as C, and every argument is checked against them.

The layout of a declared signature is compared with ctypes' (the platform C ABI's) layout of the
same struct, for C's every spelling of every scalar type; an Array whose dtype is not a pointer's
declared element type, a number out of a parameter's range, read-only memory for a pointer that
is not ``const``: each is an OffloadError naming the kernel and the parameter, and nothing runs.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import offload
from offload import ErrorCode, OffloadError
from offload.objects import _signature

from objects_support import SAXPY_SIGNATURE, release_library

# (the spellings C accepts, ctypes type, kind) of every scalar type
SPELLINGS: list[tuple[list[str], object, str]] = [
    (["signed char", "char signed"], ctypes.c_byte, "int"),
    (["unsigned char", "char unsigned"], ctypes.c_ubyte, "uint"),
    (["char"], ctypes.c_char, "int"),
    (["short", "short int", "signed short", "short signed int", "int short", "signed short int"], ctypes.c_short, "int"),
    (["unsigned short", "unsigned short int", "short unsigned", "int unsigned short"], ctypes.c_ushort, "uint"),
    (["int", "signed", "signed int", "int signed"], ctypes.c_int, "int"),
    (["unsigned", "unsigned int", "int unsigned"], ctypes.c_uint, "uint"),
    (["long", "long int", "signed long", "long signed int", "int long"], ctypes.c_long, "int"),
    (["unsigned long", "long unsigned", "unsigned long int", "long unsigned int", "int long unsigned"], ctypes.c_ulong, "uint"),
    (["long long", "long long int", "signed long long", "long signed long", "int long long"], ctypes.c_longlong, "int"),
    (["unsigned long long", "long long unsigned", "unsigned long long int", "long unsigned long int"], ctypes.c_ulonglong, "uint"),
    (["float"], ctypes.c_float, "float"),
    (["double"], ctypes.c_double, "float"),
    (["_Bool", "bool"], ctypes.c_bool, "uint"),
    (["int8_t"], ctypes.c_int8, "int"),
    (["uint16_t"], ctypes.c_uint16, "uint"),
    (["int32_t"], ctypes.c_int32, "int"),
    (["uint64_t"], ctypes.c_uint64, "uint"),
    (["size_t"], ctypes.c_size_t, "uint"),
    (["ssize_t"], ctypes.c_ssize_t, "int"),
]
QUALIFIERS = ["const", "volatile"]
POINTER_QUALIFIERS = ["const", "volatile", "restrict", "__restrict__", "__restrict"]


@st.composite
def c_parameter(draw: st.DrawFn) -> tuple[str, object, str]:
    """A C parameter type in a random legal spelling, its ctypes type and its kind."""
    spellings, ctype, kind = draw(st.sampled_from(SPELLINGS))
    words = draw(st.sampled_from(spellings)).split()
    for qualifier in draw(st.lists(st.sampled_from(QUALIFIERS), max_size=2)):
        words.insert(draw(st.integers(0, len(words))), qualifier)
    if draw(st.booleans()):  # a pointer, with qualifiers of its own
        stars = draw(st.integers(1, 2))
        for _ in range(stars):
            words.append("*")
            words.extend(draw(st.lists(st.sampled_from(POINTER_QUALIFIERS), max_size=2)))
        return " ".join(words), ctypes.c_void_p, "pointer"
    return " ".join(words), ctype, kind


@settings(max_examples=300, deadline=None)
@given(params=st.lists(c_parameter(), max_size=12), named=st.lists(st.booleans(), min_size=12, max_size=12))
def test_declared_layout_is_the_c_layout(params: list[tuple[str, object, str]], named: list[bool]) -> None:
    fields = [(f"p{i}", ctype) for i, (_, ctype, _) in enumerate(params)]
    reference = type("Args", (ctypes.Structure,), {"_fields_": fields})
    expected = [(getattr(reference, name).offset, getattr(reference, name).size, kind) for (name, _), (_, _, kind) in zip(fields, params)]
    text = ", ".join(f"{spelling} p{i}" if named[i] else spelling for i, (spelling, _, _) in enumerate(params))
    as_string = _signature.declared_params(text, "k")
    as_items = _signature.declared_params([spelling for spelling, _, _ in params], "k")
    for declared in (as_string, as_items):
        assert [(p.offset, p.size, p.kind) for p in declared] == expected, text
    assert [p.name for p in as_string] == [f"p{i}" if named[i] else "" for i in range(len(params))]


TOKENS = ["int", "float", "unsigned", "long", "short", "char", "void", "const", "*", "x", "y", "[", "]", "4", "(", ")",
          "struct", "blah", ";", "double", "signed", "restrict", "=", "1"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(TOKENS), min_size=0, max_size=5), min_size=1, max_size=4))
def test_any_signature_text_parses_or_is_a_named_error(entries: list[list[str]]) -> None:
    text = ", ".join(" ".join(words) for words in entries)
    try:
        params = _signature.declared_params(text, "kernel 'k' signature")
    except OffloadError as error:
        assert error.code is ErrorCode.INVALID_ARGUMENT
        assert "kernel 'k' signature" in error.details and repr(text) in error.details
        assert re.search(r"syntax error|unknown type|no known layout|no fixed size", error.details), error.details
        return
    assert len(params) == len([e for e in entries if e]) or text.strip() == "void"
    assert all(p.kind in ("int", "uint", "float", "pointer") for p in params)


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        ("blah *x", r"parameter #0 'blah \*x': unknown type 'blah'"),
        ("float a, const float *x y", r"syntax error in parameter #1 'const float \*x y': unexpected 'y'"),
        ("unsigned float f", r"syntax error in parameter #0 'unsigned float f'"),
        ("int (x)", r"syntax error in parameter #0 'int \(x\)': unexpected '\('"),
        ("long double d", r"no fixed size"),
        ("struct pair p", r"no known layout"),
        ("const x", r"unknown type 'x'"),
        ("float a,, int b", r"syntax error in parameter #1 '': an empty parameter"),
    ],
)
def test_signature_errors_say_what_is_wrong(signature: str, message: str) -> None:
    with pytest.raises(OffloadError) as info:
        _signature.declared_params(signature, "kernel 'k' signature")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert repr(signature) in info.value.details
    assert re.search(message, info.value.details), info.value.details


def test_multi_word_types_have_their_c_size() -> None:
    params, pointees = _signature.declared_signature(
        "unsigned char, unsigned long, long long, signed char, short int, const float *__restrict__ x, float y[], void *p",
        "k",
    )
    assert [(p.size, p.kind) for p in params[:5]] == [(1, "uint"), (8, "uint"), (8, "int"), (1, "int"), (2, "int")]
    assert [(p.kind, p.name) for p in params[5:]] == [("pointer", "x"), ("pointer", "y"), ("pointer", "p")]
    assert [(q.element, q.const) for q in pointees[5:] if q is not None] == [("float32", True), ("float32", False), (None, False)]


# --- arguments checked against the declaration ---------------------------------------------------


@pytest.fixture
def saxpy(host: offload.objects.Device, saxpy_image: bytes) -> Iterator[offload.Kernel]:
    with host.load_program(saxpy_image) as program:
        yield program.kernel("saxpy", SAXPY_SIGNATURE)


DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "bool",
          "complex64", ">f4", "V4", "S4"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(DTYPES), queued=st.booleans(), through=st.sampled_from(["launch", "pack"]))
def test_an_array_of_another_element_type_is_refused(
    saxpy: offload.Kernel, host: offload.objects.Device, dtype: str, queued: bool, through: str
) -> None:
    y = offload.to_device(np.full(16, 7, np.float32), host)
    x = offload.empty(16 * 4 // np.dtype(dtype).itemsize, dtype, host)
    call = {
        "launch": lambda: saxpy.launch(1, 16, 2.0, x, y, 16, queue=queue),
        "pack": lambda: saxpy.pack(2.0, x, y, 16),
    }[through]
    with host.queue() as queue:
        if np.dtype(dtype) == np.float32:
            call()
            return
        with pytest.raises(OffloadError) as info:
            call()
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "kernel 'saxpy' parameter 'x'" in info.value.details
    assert f"Array of {np.dtype(dtype)}" in info.value.details and "float32" in info.value.details
    np.testing.assert_array_equal(y.to_numpy(), 7)  # nothing ran
    # the output parameter too, and an untyped Buffer is taken as it is
    with pytest.raises(OffloadError, match="parameter 'y'"):
        saxpy.launch(1, 16, 2.0, y, x, 16)
    if through == "launch":
        saxpy.launch(1, 16, 2.0, y.buffer, y, 16)
        np.testing.assert_array_equal(y.to_numpy(), 21)


@pytest.mark.parametrize(
    ("index", "value", "shown"),
    [
        pytest.param(0, 1e300, "1e+300", id="huge-float"),
        pytest.param(0, 10**400, "an int of 1329 bits", id="int-beyond-double"),
        pytest.param(0, -1e39, "-1e+39", id="below-float32"),
        pytest.param(0, np.float64(3.5e38), "3.5e+38", id="numpy-float64-beyond-float32"),
    ],
)
def test_numbers_out_of_range_name_the_parameter(
    saxpy: offload.Kernel, host: offload.objects.Device, index: int, value: object, shown: str
) -> None:
    x = offload.to_device(np.ones(16, np.float32), host)
    y = offload.to_device(np.zeros(16, np.float32), host)
    args = [2.0, x, y, 16]
    args[index] = value
    name = ["a", "x", "y", "n"][index]
    for call in (lambda: saxpy.launch(1, 16, *args), lambda: saxpy.pack(*args)):
        with pytest.raises(OffloadError) as info:
            call()
        assert info.value.code is ErrorCode.INVALID_ARGUMENT
        assert f"kernel 'saxpy' parameter '{name}'" in info.value.details and shown in info.value.details
        assert "out of range" in info.value.details
    with host.queue() as queue, pytest.raises(OffloadError, match=f"parameter '{name}'"):
        queue.launch(saxpy, 1, 16, *args)
    np.testing.assert_array_equal(y.to_numpy(), 0)


def test_read_only_memory_only_for_a_pointer_to_const(saxpy: offload.Kernel, host: offload.objects.Device) -> None:
    data = np.frombuffer(np.arange(16, dtype=np.float32).tobytes(), np.float32)  # an immutable bytes underneath
    assert not data.flags.writeable
    x = offload.from_dlpack(data)
    assert x.buffer.readonly
    y = offload.to_device(np.zeros(16, np.float32), host)
    saxpy.launch(1, 16, 2.0, x, y, 16)  # x is `const float *`
    np.testing.assert_array_equal(y.to_numpy(), 2 * np.arange(16))
    with pytest.raises(OffloadError, match=r"kernel 'saxpy' parameter 'y'.*read-only"):
        saxpy.launch(1, 16, 2.0, y, x, 16)
    np.testing.assert_array_equal(data, np.arange(16))
