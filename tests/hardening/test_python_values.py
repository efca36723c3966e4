"""The flat API takes what Python users pass: ``__index__`` integers (numpy) wherever an int, a
size or an address is expected, ``__offload_ptr__`` objects as addresses; anything else is
INVALID_ARGUMENT naming the parameter."""

from __future__ import annotations

import ctypes

import pytest

import offload as ol

E = ol.ErrorCode


class Index:
    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


class Buffer:
    """What the Pythonic layer's buffers look like to the flat API."""

    def __init__(self, address: int) -> None:
        self.__offload_ptr__ = address


class ClassPtr:
    __offload_ptr__ = property(lambda self: self.address)

    def __init__(self, address: int) -> None:
        self.address = address


class Raising:
    @property
    def __offload_ptr__(self) -> int:
        raise RuntimeError("no address")


def test_index_integers_and_offload_pointers_are_accepted(host: ol.DeviceHandle) -> None:
    a = ol.olMemAlloc(host, ol.AllocType.HOST, Index(64))
    src = (ctypes.c_char * 64)(*b"p" * 64)
    ol.olMemcpy(None, Buffer(a), host, Index(ctypes.addressof(src)), host, Index(64))
    assert ctypes.string_at(a, 64) == b"p" * 64
    ol.olMemFill(None, ClassPtr(a), b"\2", Index(64))
    assert ctypes.string_at(a, 2) == b"\2\2"
    assert ol.olGetMemInfo(Index(a + 3), ol.MemInfo.SIZE) == 64
    assert ol.olGetDeviceInfo(host, Index(int(ol.DeviceInfo.TYPE))) is ol.DeviceType.HOST
    launch = ol.KernelLaunchSizeArgs(Index(1), (Index(2), 1, 1), (Index(1), 1, 1), Index(0))
    assert launch.num_groups == (2, 1, 1)
    ol.olMemFree(Buffer(a))


@pytest.mark.parametrize("value", ["8", 1.5, True, [1], Raising(), Buffer("x"), Buffer(-1), Buffer(2**64)])
def test_other_values_are_invalid_argument_naming_the_parameter(host: ol.DeviceHandle, value: object) -> None:
    src = (ctypes.c_char * 8)()
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemcpy(None, value, host, ctypes.addressof(src), host, 8)
    assert info.value.code is E.INVALID_ARGUMENT and "DstPtr" in info.value.details


@pytest.mark.parametrize("value", ["8", 1.5, True, None, [8]])
def test_sizes_of_other_types_are_refused(host: ol.DeviceHandle, value: object) -> None:
    src = (ctypes.c_char * 8)()
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemcpy(None, ctypes.addressof(src), host, ctypes.addressof(src), host, value)
    assert info.value.code in (E.INVALID_ARGUMENT, E.INVALID_SIZE) and "Size" in info.value.details
