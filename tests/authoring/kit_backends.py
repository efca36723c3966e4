"""Backends that leave optional hook groups out, for running the conformance kit against them.

``MemoryOnlyBackend``: the memory-only case of issue 11 (no kernels, no events), with device
memory carved out of one real arena (a ctypes buffer, first-fit), synchronous queues, and only
DEVICE allocations (``mem_alloc`` answers UNSUPPORTED for MANAGED and HOST, which its
capabilities declare). Left out: events, host functions, fill, data_exchange (the core bounces
device-to-device copies through host memory), registration, programs, launches, occupancy.

``BareBackend``: only the required hooks, so every optional group is absent.
"""

from __future__ import annotations

import bisect
import ctypes
import threading
from collections.abc import Mapping
from typing import Any

from offload import AllocType, DeviceInfo, Dimensions, ErrorCode, OffloadError, hookimpl
from offload.testing import Capabilities

ARENA_SIZE = 1 << 24
_ALIGN = 64


class Arena:
    """First-fit allocation in one ctypes buffer: the device's memory."""

    def __init__(self, size: int) -> None:
        self.buffer = (ctypes.c_char * size)()
        self.base = ctypes.addressof(self.buffer)
        self.size = size
        self.free = [(0, size)]  # sorted (offset, length) holes
        self.live: dict[int, int] = {}  # address -> length
        self.lock = threading.Lock()

    def alloc(self, size: int) -> int:
        length = -(-size // _ALIGN) * _ALIGN
        with self.lock:
            for i, (offset, hole) in enumerate(self.free):
                if hole >= length:
                    self.free[i : i + 1] = [(offset + length, hole - length)] if hole > length else []
                    self.live[self.base + offset] = length
                    return self.base + offset
        raise OffloadError(ErrorCode.OUT_OF_RESOURCES, f"{size} bytes do not fit in the {self.size}-byte arena")

    def release(self, address: int) -> None:
        with self.lock:
            length = self.live.pop(address)
            bisect.insort(self.free, (address - self.base, length))
            merged: list[tuple[int, int]] = []
            for offset, hole in self.free:
                if merged and merged[-1][0] + merged[-1][1] == offset:
                    merged[-1] = (merged[-1][0], merged[-1][1] + hole)
                else:
                    merged.append((offset, hole))
            self.free = merged


def _info(name: str, size: int) -> dict[DeviceInfo, Any]:
    """Only what has no default: PRODUCT_NAME, the FP support flags and configs, the vector
    widths and MAX_MEM_ALLOC_SIZE are left to the core."""
    return {
        DeviceInfo.NAME: name,
        DeviceInfo.UID: f"{name}-0",
        DeviceInfo.VENDOR: "offload tests",
        DeviceInfo.DRIVER_VERSION: "1",
        DeviceInfo.VENDOR_ID: 0,
        DeviceInfo.NUM_COMPUTE_UNITS: 1,
        DeviceInfo.MAX_CLOCK_FREQUENCY: 0,
        DeviceInfo.MEMORY_CLOCK_RATE: 0,
        DeviceInfo.ADDRESS_BITS: 64,
        DeviceInfo.GLOBAL_MEM_SIZE: size,
        DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE: 0,
        DeviceInfo.MAX_WORK_GROUP_SIZE: 1,
        DeviceInfo.MAX_WORK_GROUP_SIZE_PER_DIMENSION: Dimensions(1, 1, 1),
        DeviceInfo.MAX_WORK_SIZE: 1,
        DeviceInfo.MAX_WORK_SIZE_PER_DIMENSION: (1, 1, 1),
        DeviceInfo.NUM_LANES: 1,
    }


ZERO_INFO = frozenset(
    {DeviceInfo.VENDOR_ID, DeviceInfo.MAX_CLOCK_FREQUENCY, DeviceInfo.MEMORY_CLOCK_RATE, DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE}
)


class BareBackend:
    """The seven required hooks and nothing else: no memory, no queues, no programs."""

    @hookimpl
    def init(self) -> list[str]:
        return ["bare device"]

    @hookimpl
    def deinit(self) -> None:
        """Nothing to release."""

    @hookimpl
    def get_device_info(self, device: str) -> Mapping[DeviceInfo, Any]:
        return _info(device, 0) | {DeviceInfo.GLOBAL_MEM_SIZE: 1}

    @hookimpl
    def load_binary(self, device: Any, data: bytes) -> Any:
        raise OffloadError(ErrorCode.INVALID_BINARY, "this device runs no programs")

    @hookimpl
    def unload_binary(self, device: Any, image: Any) -> None:
        """Never called: load_binary returns no image."""

    @hookimpl
    def synchronize(self, device: Any, queue: Any, release: bool) -> None:
        """Never called: there are no queues."""

    @hookimpl
    def has_pending_work(self, device: Any, queue: Any) -> bool:
        return False


class MemoryOnlyBackend(BareBackend):
    """DEVICE memory in an arena, host<->device copies, synchronous queues."""

    @hookimpl
    def init(self) -> list[Arena]:
        return [Arena(ARENA_SIZE)]

    @hookimpl
    def get_device_info(self, device: Arena) -> Mapping[DeviceInfo, Any]:
        return _info("memory-only arena", device.size)

    @hookimpl
    def mem_alloc(self, device: Arena, alloc_type: AllocType, size: int) -> int:
        if alloc_type is not AllocType.DEVICE:
            raise OffloadError(ErrorCode.UNSUPPORTED, f"the arena holds DEVICE memory only, not {alloc_type.name}")
        return device.alloc(size)

    @hookimpl
    def mem_free(self, device: Arena, address: int) -> None:
        device.release(address)

    @hookimpl
    def data_submit(self, device: Arena, dst: int, src: int, size: int) -> None:
        ctypes.memmove(dst, src, size)

    @hookimpl
    def data_retrieve(self, device: Arena, dst: int, src: int, size: int) -> None:
        ctypes.memmove(dst, src, size)

    @hookimpl
    def create_queue(self, device: Arena) -> object:
        return object()


class BareCapabilities(Capabilities):
    zero_info = ZERO_INFO


class MemoryOnlyCapabilities(Capabilities):
    """Only what the hooks cannot show: mem_alloc exists but refuses MANAGED and HOST."""

    managed_memory = False
    host_memory = False
    zero_info = ZERO_INFO


class MisdeclaredCapabilities(MemoryOnlyCapabilities):
    """Wrong on purpose: claims events it lacks, and denies copies it has."""

    events = True
    copies = False
