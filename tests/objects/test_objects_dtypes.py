"""What the layer cannot represent faithfully is refused by name; what numpy can view is viewed.

Object dtypes (Python references) never reach device memory; a read-only DLPack producer stays
read-only; ``numpy.asarray(array)`` of host-accessible memory is a view for every dtype, shape and
byte-stride numpy can describe (structured, non-native byte order, strides not a multiple of the
item size), equal to numpy's own view of the same bytes. Memory kinds are taken by name.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import offload
from offload import AllocType, ErrorCode, OffloadError


def test_object_dtypes_are_refused_by_name() -> None:
    """In a child: copying PyObject pointers without references crashed when repeated."""
    code = textwrap.dedent(
        """
        import numpy as np, offload
        from offload import OffloadError
        dev = offload.devices("host")[0]
        for make in (
            lambda: offload.to_device(np.array([object(), "x"], dtype=object), dev),
            lambda: offload.to_device(np.zeros(2, dtype=[("a", "i4"), ("o", "O")]), dev),
            lambda: offload.empty(4, object, dev),
            lambda: offload.Buffer(64, dev).view(np.dtype("O")),
        ):
            for _ in range(50):
                try:
                    make()
                    print("accepted")
                except OffloadError as error:
                    assert error.code.name == "INVALID_ARGUMENT" and "Python object" in error.details, error
            print("refused")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["refused"] * 4


def test_from_dlpack_keeps_the_read_only_flag(host: offload.objects.Device) -> None:
    data = b"immutable bytes!"
    source = np.frombuffer(data, np.uint8)
    array = offload.from_dlpack(source)
    assert array.buffer.readonly and not array.buffer.owns_memory
    for write in (
        lambda: array.copy_from(np.zeros(16, np.uint8)),
        lambda: array.buffer.fill(b"\0"),
        lambda: array.buffer.copy_from(b"x" * 16),
        lambda: offload.to_device(np.zeros(16, np.uint8), host).buffer.copy_to(array),
    ):
        with pytest.raises(OffloadError) as info:
            write()
        assert info.value.code is ErrorCode.INVALID_ARGUMENT and "read-only" in info.value.details
    assert data == b"immutable bytes!"
    view = np.asarray(array)  # a view that numpy also refuses to write
    assert not view.flags.writeable and view.tobytes() == data
    copy = offload.from_dlpack(source, copy=True)
    assert not copy.buffer.readonly
    copy.copy_from(np.zeros(16, np.uint8))
    assert copy.to_numpy().sum() == 0


DTYPES = st.sampled_from(
    [
        "u1", "<i2", ">i2", "<f4", ">f4", ">f8", "<c8", ">c16", "?", "S3", "V5", "<M8[s]", ">m8[ms]",
        [("a", "<i4"), ("b", ">f8")],
        [("x", "u1"), ("y", "<i2", (2,))],
        {"names": ["p", "q"], "formats": ["<u2", ">u4"], "offsets": [0, 4], "itemsize": 12},
    ]
)


@st.composite
def layouts(draw: st.DrawFn) -> tuple[np.dtype, tuple[int, ...], tuple[int, ...], int]:
    """A dtype, a shape, byte strides (any sign, not a multiple of the item size) and an offset."""
    dtype = np.dtype(draw(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    strides = tuple(
        draw(st.integers(-3 * dtype.itemsize, 3 * dtype.itemsize).filter(lambda s: s == 0 or abs(s) >= dtype.itemsize))
        for _ in shape
    )
    offset = draw(st.integers(0, 64))
    return dtype, shape, strides, offset


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bytes field by field (numpy copies of structured items skip their padding)."""
    if a.dtype.names:
        return all(_same_values(a[name], b[name]) for name in a.dtype.names)
    return a.tobytes() == b.tobytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=layouts())
def test_asarray_views_every_layout_numpy_can_describe(host: offload.objects.Device, layout: tuple) -> None:
    dtype, shape, strides, offset = layout
    size = 512
    raw = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8)
    base = offload.to_device(raw, host, "host")
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0 and n) if all(shape) else 0
    start = offset - low  # the first byte element 0 may sit at, all negative strides included
    view = base.buffer.view(dtype, shape, strides, start)
    expected = np.ndarray(shape, dtype, buffer=raw, offset=start, strides=strides)
    got = np.asarray(view)
    assert got.dtype == dtype and got.shape == shape
    assert _same_values(got, expected)
    if got.size:  # a view of the very bytes, not a copy
        assert got.ctypes.data == base.address + start and got.strides == strides
    assert _same_values(view.to_numpy(), expected)
    del got


@pytest.mark.parametrize("name", ["device", "host", "managed", "MANAGED", " Host "])
def test_memory_kinds_by_name(host: offload.objects.Device, name: str) -> None:
    buffer = offload.Buffer(64, host, name)
    assert buffer.kind is AllocType[name.strip().upper()]
    array = offload.empty(4, "f4", host, name)
    assert array.kind is buffer.kind
    assert offload.to_device(np.arange(3), host, name).kind is buffer.kind
    for wrong in (name + "x", "", 7, None):  # and a name that is no kind is named
        with pytest.raises(OffloadError) as info:
            offload.Buffer(64, host, wrong)  # type: ignore[arg-type]
        assert info.value.code is ErrorCode.INVALID_ENUMERATION and repr(wrong) in info.value.details
