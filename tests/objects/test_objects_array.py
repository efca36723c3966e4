"""Array views, numpy round trips and DLPack both ways (dtype, shape, strides, zero-copy)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import offload
from offload import AllocType, ErrorCode, OffloadError
from offload.objects import _dlpack

from objects_backends import ReportingHostBackend
from objects_support import release_library

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (0,), (7,), (3, 4), (2, 3, 4)]


def _sample(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 100
    return values.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_numpy_round_trip(device: offload.objects.Device, dtype: str, shape: tuple[int, ...]) -> None:
    data = _sample(shape, dtype)
    array = offload.to_device(data, device)
    assert (array.shape, array.dtype) == (data.shape, data.dtype)
    assert array.strides == data.strides or data.size == 0  # numpy's strides of empty arrays vary
    assert array.device == device and array.kind is AllocType.DEVICE and array.is_contiguous
    back = array.to_numpy()
    assert back.dtype == data.dtype and back.shape == data.shape
    np.testing.assert_array_equal(back, data)


def test_fortran_order_and_queue_copies(device: offload.objects.Device) -> None:
    data = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    with device.queue() as queue:
        array = offload.to_device(data, device, queue=queue)
        out = array.to_numpy(queue=queue)
    np.testing.assert_array_equal(out, data)


def test_views_with_strides_and_offsets(device: offload.objects.Device) -> None:
    data = np.arange(24, dtype=np.int32).reshape(4, 6)
    base = offload.to_device(data, device)
    cols = base.buffer.view(np.int32, (4, 3), (24, 8), offset=4)  # data[:, 1::2]
    assert not cols.is_contiguous and cols.nbytes == 48
    np.testing.assert_array_equal(cols.to_numpy(), data[:, 1::2])
    reversed_rows = base.buffer.view("int32", (4, 6), (-24, 4), offset=72)  # data[::-1]
    np.testing.assert_array_equal(reversed_rows.to_numpy(), data[::-1])
    assert base.buffer.view("float64").shape == (12,)
    with pytest.raises(OffloadError) as info:
        base.buffer.view("int32", (5, 6))
    assert info.value.code is ErrorCode.INVALID_SIZE and "does not fit" in str(info.value)
    with pytest.raises(OffloadError, match="strides"):
        base.buffer.view("int32", (4, 6), (4,))
    with pytest.raises(OffloadError, match="C-contiguous"):
        cols.copy_from(np.zeros((4, 3), np.int32))
    with pytest.raises(OffloadError, match="shape"):
        base.copy_from(np.zeros((6, 4), np.int32))


def test_empty_and_len() -> None:
    array = offload.empty((5, 2), "float32")
    assert len(array) == 5 and array.size == 10 and array.nbytes == 40 and array.ndim == 2
    array.copy_from(np.ones((5, 2)))
    assert array.to_numpy().sum() == 10
    assert offload.empty((0,)).to_numpy().shape == (0,)
    assert "shape=(5, 2)" in repr(array)


# --- DLPack: offload -> numpy ------------------------------------------------------------------


class LegacyProducer:
    """A DLPack producer from before the versioned protocol (no max_version)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __dlpack__(self, stream: object = None) -> object:
        return self.inner.__dlpack__(stream=stream)  # type: ignore[attr-defined]

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.inner.__dlpack_device__()  # type: ignore[attr-defined, no-any-return]


@pytest.mark.usefixtures("no_exports_left")
@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_views_host_memory_without_copy(host: offload.objects.Device, dtype: str, legacy: bool) -> None:
    data = _sample((3, 5), dtype)
    array = offload.to_device(data, host)
    producer = LegacyProducer(array) if legacy else array
    view = np.from_dlpack(producer)
    assert view.ctypes.data == array.address  # zero-copy
    assert (view.dtype, view.shape, view.strides) == (data.dtype, data.shape, data.strides)
    np.testing.assert_array_equal(view, data)
    if legacy:  # numpy marks legacy imports read-only: the capsule cannot say it is writable
        assert not view.flags.writeable
    else:
        view[0, 0] = data[1, 1]
        assert array.to_numpy()[0, 0] == data[1, 1]
    del array  # the export keeps the memory alive
    gc.collect()
    np.testing.assert_array_equal(view[1:], data[1:])  # still readable
    del view, producer


@pytest.mark.usefixtures("no_exports_left")
def test_strided_export_and_buffer_export(host: offload.objects.Device) -> None:
    data = np.arange(24, dtype=np.int16).reshape(4, 6)
    base = offload.to_device(data, host)
    cols = base.buffer.view(np.int16, (4, 3), (12, 4), offset=2)
    view = np.from_dlpack(cols)
    assert view.strides == (12, 4)
    np.testing.assert_array_equal(view, data[:, 1::2])
    raw = np.from_dlpack(base.buffer)
    assert raw.dtype == np.uint8 and raw.nbytes == 48 and raw.ctypes.data == base.address
    assert np.asarray(base).ctypes.data == base.address  # __array__: a view of host memory
    del view, raw


@pytest.mark.usefixtures("no_exports_left")
def test_unconsumed_capsules_release_their_export(host: offload.objects.Device) -> None:
    array = offload.to_device(np.arange(4.0), host)
    capsules = [array.__dlpack__(), array.__dlpack__(max_version=(1, 0))]
    assert _dlpack.exported_count() == 2
    del capsules


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.usefixtures("no_exports_left")
@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_consumer_releasing_while_its_exception_is_pending(host: offload.objects.Device, legacy: bool) -> None:
    """numpy frees the imported array after setting the TypeError: releasing runs no Python."""
    array = offload.to_device(np.arange(4.0), host)
    with pytest.raises(TypeError):  # numpy's UFuncTypeError, not a SystemError from a callback
        np.from_dlpack(LegacyProducer(array) if legacy else array) + "x"


@pytest.mark.usefixtures("no_exports_left")
def test_export_at_an_address_ending_in_ones() -> None:
    capsule = _dlpack.export(None, 0x1_FFFF_FFFF, (_dlpack.CPU, 0), (1,), (1,), (_dlpack.UINT, 8), versioned=False)
    imported = _dlpack.consume(capsule)  # reads the struct only, never the (made-up) memory
    assert imported.address == 0x1_FFFF_FFFF and imported.shape == (1,) and imported.strides == (1,)
    assert _dlpack.exported_count() == 1
    del imported, capsule  # our consumer calls the deleter


def test_export_requests(host: offload.objects.Device) -> None:
    array = offload.to_device(np.arange(6.0), host)
    with pytest.raises(BufferError, match="stream"):
        array.__dlpack__(stream=1)
    copied = np.from_dlpack(array, copy=True)
    assert copied.ctypes.data != array.address
    np.testing.assert_array_equal(copied, np.arange(6.0))
    with pytest.raises(BufferError):
        array.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="DLPack"):
        offload.to_device(np.array(["a"]), host).__dlpack__()


# --- DLPack: producers -> offload ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_dlpack_numpy_without_copy(host: offload.objects.Device, dtype: str) -> None:
    data = _sample((4, 6), dtype)
    array = offload.from_dlpack(data)
    assert array.address == data.ctypes.data and array.device == host and array.kind is AllocType.HOST
    assert (array.shape, array.dtype, array.strides) == (data.shape, data.dtype, data.strides)
    assert not array.buffer.owns_memory
    np.testing.assert_array_equal(array.to_numpy(), data)


def test_from_dlpack_strides_and_reversal(host: offload.objects.Device) -> None:
    data = np.arange(40, dtype=np.float32).reshape(5, 8)
    for piece in (data[::2, 1::3], data[::-1], data[:, ::-2], data.T):
        array = offload.from_dlpack(piece)
        assert array.strides == piece.strides and array.shape == piece.shape
        np.testing.assert_array_equal(array.to_numpy(), piece)
        np.testing.assert_array_equal(np.from_dlpack(array), piece)


def test_from_dlpack_keeps_the_producer_alive(host: offload.objects.Device) -> None:
    array = offload.from_dlpack(np.arange(1000, dtype=np.int64))
    gc.collect()
    assert array.to_numpy().sum() == sum(range(1000))


def test_from_dlpack_of_offload_arrays_lists_and_copies(host: offload.objects.Device) -> None:
    source = offload.to_device(np.arange(10, dtype=np.int32), host)
    same = offload.from_dlpack(source)
    assert same.address == source.address
    copy = offload.from_dlpack(source, copy=True)
    assert copy.address != source.address and copy.buffer.owns_memory
    np.testing.assert_array_equal(copy.to_numpy(), np.arange(10))
    listed = offload.from_dlpack([[1, 2], [3, 4]])
    assert listed.shape == (2, 2)
    np.testing.assert_array_equal(listed.to_numpy(), [[1, 2], [3, 4]])


# --- DLPack device types per backend and kind ----------------------------------------------------


@pytest.fixture
def gpu_named(request: pytest.FixtureRequest) -> Iterator[offload.objects.Device]:
    """The host backend registered in-process under a GPU platform name (see backends.py)."""
    name = request.param
    offload.register_backend(name, ReportingHostBackend)
    try:
        yield offload.devices(name)[0]
    finally:
        release_library()
        offload.unregister_backend(name)


EXPECTED = {
    ("cuda", AllocType.DEVICE): (_dlpack.CUDA, 0),
    ("cuda", AllocType.HOST): (_dlpack.CUDA_HOST, 0),
    ("cuda", AllocType.MANAGED): (_dlpack.CUDA_MANAGED, 0),
    ("amdgpu", AllocType.DEVICE): (_dlpack.ROCM, 0),
    ("amdgpu", AllocType.HOST): (_dlpack.ROCM_HOST, 0),
    ("amdgpu", AllocType.MANAGED): (_dlpack.ROCM, 0),
}


@pytest.mark.usefixtures("no_exports_left")
@pytest.mark.parametrize("gpu_named", ["cuda", "amdgpu"], indirect=True)
@pytest.mark.parametrize("kind", list(AllocType), ids=lambda k: k.name)
def test_dlpack_device_per_backend_and_kind(gpu_named: offload.objects.Device, kind: AllocType) -> None:
    data = np.arange(8, dtype=np.float32)
    array = offload.to_device(data, gpu_named, kind)
    expected = EXPECTED[(gpu_named.platform.name, kind)]
    assert array.__dlpack_device__() == expected == array.buffer.__dlpack_device__()
    if expected[0] in _dlpack.HOST_ACCESSIBLE:  # numpy takes pinned and managed memory as it is
        view = np.from_dlpack(array)
        assert view.ctypes.data == array.address
        del view
        assert np.asarray(array).ctypes.data == array.address
    else:  # device memory: numpy refuses it, and asks for a host copy instead
        with pytest.raises((BufferError, RuntimeError)):
            np.from_dlpack(array)
        copied = np.from_dlpack(array, device="cpu", copy=True)
        np.testing.assert_array_equal(copied, data)
        np.testing.assert_array_equal(np.asarray(array), data)  # __array__ copies
        with pytest.raises(ValueError):
            array.__array__(copy=False)
    imported = offload.from_dlpack(array)  # a GPU producer: the same memory on the same device
    seen_kind = AllocType.DEVICE if expected[0] == _dlpack.ROCM else kind  # DLPack has no ROCm managed type
    assert imported.device == gpu_named and imported.kind is seen_kind and imported.address == array.address
    moved = offload.from_dlpack(array, device=offload.devices("host")[0])
    assert moved.device.is_host and moved.address != array.address
    np.testing.assert_array_equal(moved.to_numpy(), data)
    with pytest.raises(BufferError, match="copy=False"):
        offload.from_dlpack(array, device="host:0", copy=False)
    del imported, moved


def test_unmapped_device_types_are_buffer_errors() -> None:
    from offload.objects._cai import _device_for

    with pytest.raises(BufferError, match="no offload backend"):
        _device_for(_dlpack.ONE_API, 0)
    with pytest.raises(BufferError, match="CUDA"):
        _device_for(_dlpack.CUDA, 3)  # no CUDA device 3 here
    assert _device_for(_dlpack.CUDA_HOST, 0)[0].is_host or _device_for(_dlpack.CUDA_HOST, 0)[1] is AllocType.HOST
