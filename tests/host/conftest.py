"""Fixtures of the host backend's queue tests (tests/host/test_queues_native_*.py)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator

import pytest

import offload as ol
from offload_host import build_program

from native_queue_support import KERNELS


@pytest.fixture
def kernels(host: ol.DeviceHandle) -> Iterator[dict[str, ol.SymbolHandle]]:
    """The ``tid`` and ``bump`` kernels of native_queue_support.KERNELS, built for ``host``."""
    program = ol.olCreateProgram(host, build_program(KERNELS, name="queue_kernels"))
    yield {name: ol.olGetSymbol(program, name, ol.SymbolKind.KERNEL) for name in ("tid", "bump")}
    ol.olDestroyProgram(program)


@pytest.fixture
def word(host: ol.DeviceHandle) -> Iterator[int]:
    """A zeroed 8-byte device allocation."""
    address = ol.olMemAlloc(host, ol.AllocType.DEVICE, 8)
    ctypes.memset(address, 0, 8)
    yield address
    ol.olMemFree(address)
