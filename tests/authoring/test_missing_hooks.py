"""Each optional hook, missing: the call that needs it answers ``OL_ERRC_UNSUPPORTED`` naming the
backend and the hook, or the core's documented fallback runs (``hookspecs``' module docstring).

The backend under test is the host backend with one hook taken away, registered in-process as
"partial" (not a HOST platform, so copies to and from host memory reach its hooks); the real host
backend supplies host memory.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import offload as ol
import offload_host
from offload.hookspecs import HOOK_NAMES, REQUIRED_HOOKS
from offload_host import HostBackend

from helpers import devices

OPTIONAL = sorted(set(HOOK_NAMES) - REQUIRED_HOOKS)
SOURCE = "OFFLOAD_KERNEL_NO_PARAMS(nothing); OFFLOAD_KERNEL(nothing) {}"
NAME = "partial"
A = ol.AllocType


def without(hook: str) -> type:
    """HostBackend's class body less ``hook`` (the other hookimpls and helpers unchanged)."""
    body = {k: v for k, v in vars(HostBackend).items() if k != hook and not k.startswith("__")}
    body["__init__"] = HostBackend.__init__ if "__init__" in vars(HostBackend) else object.__init__
    return type(f"HostWithout_{hook}", (), body)


class World:
    """An olInit session with the partial backend and the host backend."""

    def __init__(self) -> None:
        found = devices()
        self.device = next(d for d in found if d.platform.name == NAME)
        self.host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
        self.made: list[Callable[[], None]] = []

    def alloc(self, size: int = 256, kind: Any = A.MANAGED) -> int:
        address = ol.olMemAlloc(self.device, kind, size)
        self.made.append(lambda: ol.olMemFree(address))
        return address

    def buffer(self, size: int = 256) -> int:
        """The address of host memory kept alive until the session ends."""
        array = (ctypes.c_uint8 * size)()
        self.made.append(lambda: array)
        return ctypes.addressof(array)

    def queue(self) -> Any:
        queue = ol.olCreateQueue(self.device)
        self.made.append(lambda: ol.olDestroyQueue(queue))
        return queue

    def program(self, name: str) -> Any:
        program = ol.olCreateProgram(self.device, offload_host.build_test_kernel(name))
        self.made.append(lambda: ol.olDestroyProgram(program))
        return program

    def foo(self) -> Any:
        return ol.olGetSymbol(self.program("foo"), "foo", ol.SymbolKind.KERNEL)

    def event(self, queue: Any) -> Any:
        event = ol.olCreateEvent(queue)
        self.made.append(lambda: ol.olDestroyEvent(event))
        return event


@pytest.fixture
def world(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    hook = request.node.callspec.params["hook"]
    monkeypatch.setenv("OFFLOAD_BACKENDS", f"{NAME},host")
    ol.register_backend(NAME, without(hook))
    ol.olInit()
    try:
        made = World()
        yield made
        for undo in reversed(made.made):
            undo()
    finally:
        ol.olShutDown()
        ol.unregister_backend(NAME)


def _launch() -> ol.KernelLaunchSizeArgs:
    return ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1))


# hook -> the call that needs it (None: the core has a fallback, checked in FALLBACKS)
CALLS: dict[str, Callable[[World], Any]] = {
    "get_kernel": lambda w: ol.olGetSymbol(w.program("foo"), "foo", ol.SymbolKind.KERNEL),
    "get_global": lambda w: ol.olGetSymbol(w.program("global"), "global", ol.SymbolKind.GLOBAL_VARIABLE),
    "launch_kernel": lambda w: ol.olLaunchKernel(None, w.device, w.foo(), struct.pack("P", w.alloc()), _launch()),
    "max_group_size": lambda w: ol.olCalculateOptimalOccupancy(w.device, w.foo(), 0),
    "mem_alloc": lambda w: ol.olMemAlloc(w.device, A.DEVICE, 64),
    "mem_free": lambda w: ol.olMemFree(ol.olMemAlloc(w.device, A.DEVICE, 64)),
    "mem_register": lambda w: ol.olMemRegister(w.device, w.buffer(), 256, 0),
    "mem_unregister": lambda w: ol.olMemUnregister(w.device, w.buffer(), 0),
    "data_submit": lambda w: ol.olMemcpy(None, w.alloc(), w.device, w.buffer(), w.host, 256),
    "data_retrieve": lambda w: ol.olMemcpy(None, w.buffer(), w.host, w.alloc(), w.device, 256),
    "data_fill": lambda w: ol.olMemFill(None, w.alloc(), b"\x01", 256),
    "create_queue": lambda w: ol.olCreateQueue(w.device),
    "enqueue_host_call": lambda w: ol.olLaunchHostFunction(w.queue(), lambda _: None, None),
    "create_event": lambda w: ol.olCreateEvent(w.queue()),
    "wait_event": lambda w: ol.olWaitEvents(w.queue(), [w.event(w.queue())]),
    "is_event_complete": lambda w: ol.olGetEventInfo(w.event(w.queue()), ol.EventInfo.IS_COMPLETE),
    "sync_event": lambda w: ol.olSyncEvent(w.event(w.queue())),
    "event_elapsed_time": lambda w: ol.olGetEventElapsedTime(w.event(q := w.queue()), w.event(q)),
    "symbol_names": lambda w: ol.olIterateSymbols(w.program("foo"), ol.SymbolKind.KERNEL, lambda s, u: True, None),
    "max_cooperative_groups": lambda w: ol.olGetKernelMaxCooperativeGroupCount(w.device, w.foo(), _launch()),
    "launch_kernel_cooperative": lambda w: ol.olLaunchKernel(
        None, w.device, w.foo(), struct.pack("P", w.alloc()), _launch(), {ol.KernelLaunchPropType.IS_COOPERATIVE: True}
    ),
    "build_target": lambda w: ol.build(SOURCE, w.device),
    "build_source": lambda w: ol.build(SOURCE, w.device),
    "foreign_stream_wait": lambda w: ol.foreign_stream_wait(1, w.event(w.queue())),
    "foreign_stream_sync": lambda w: ol.foreign_stream_sync(w.device, 1),
    "queue_stream": lambda w: ol.queue_stream(w.queue()),
    "adopt_stream": lambda w: ol.adopt_stream(w.device, 1),
}


def _exchange_bounces(w: World) -> None:
    src, dst, out = w.alloc(256, A.DEVICE), w.alloc(256, A.DEVICE), (ctypes.c_uint8 * 256)()
    ol.olMemFill(None, src, b"\x2a", 256)
    ol.olMemcpy(None, dst, w.device, src, w.device, 256)
    ol.olMemcpy(None, ctypes.addressof(out), w.host, dst, w.device, 256)
    assert bytes(out) == b"\x2a" * 256


def _launch_without_params(w: World) -> None:
    out = w.alloc(64 * 4)
    ol.olLaunchKernel(None, w.device, w.foo(), struct.pack("P", out), _launch())
    assert list((ctypes.c_uint32 * 64).from_address(out)) == list(range(64))


def _data_path_through_python_hooks(w: World) -> None:
    """Without native entry points a queued launch, a copy and a sync go through the Python hooks."""
    out, back = w.alloc(64 * 4), w.alloc(64 * 4, A.HOST)
    queue = w.queue()
    ol.olLaunchKernel(queue, w.device, w.foo(), struct.pack("P", out), _launch())
    ol.olMemcpy(queue, back, w.host, out, w.device, 64 * 4)
    ol.olSyncQueue(queue)
    assert list((ctypes.c_uint32 * 64).from_address(back)) == list(range(64))


def _aligned_from_mem_alloc(w: World) -> None:
    """Without mem_alloc_aligned: mem_alloc's address when it is aligned (pages are), else
    UNSUPPORTED naming the device and the alignment."""
    address = ol.olMemAllocAligned(w.device, A.DEVICE, 100, 4096)
    assert address % 4096 == 0
    ol.olMemFree(address)
    big = 1 << 30
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemAllocAligned(w.device, A.DEVICE, 100, big)
    assert info.value.code is ol.ErrorCode.UNSUPPORTED and NAME in info.value.details and str(big) in info.value.details


def _prefetch_ignored(w: World) -> None:
    address = w.alloc(256)
    queue = w.queue()
    ol.olMemPrefetch(queue, [address], [256], ol.MemMigrationFlag.HOST_TO_DEVICE)
    ol.olSyncQueue(queue)


def _destroy_without_hook(w: World) -> None:
    event = ol.olCreateEvent(w.queue())
    ol.olSyncEvent(event)
    ol.olDestroyEvent(event)


def _no_binary_is_valid(w: World) -> None:
    assert ol.olIsValidBinary(w.device, offload_host.build_test_kernel("foo")) is False


def _shutdown_skips_deinit_device(w: World) -> None:
    ol.olInit()
    ol.olMemAlloc(w.device, A.DEVICE, 64)  # left over: freed by the teardown
    ol.olShutDown()  # not the last reference; the fixture's olShutDown tears down without the hook


def _no_note_without_hook(w: World) -> None:
    (status,) = [s for s in ol.backend_status() if s.name == NAME]
    assert status.loaded and status.note is None


def _liboffload_platform_info(w: World) -> None:
    platform = ol.olGetDeviceInfo(w.device, ol.DeviceInfo.PLATFORM)
    assert ol.olGetPlatformInfo(platform, ol.PlatformInfo.VENDOR_NAME) == "Unknown platform vendor"
    assert ol.olGetPlatformInfo(platform, ol.PlatformInfo.VERSION) == "v0.0.1"


def _rect_row_by_row(w: World) -> None:
    source = w.buffer(96)
    ctypes.memmove(source, bytes(range(96)), 96)
    address, back = w.alloc(256, A.DEVICE), w.buffer(256)
    ol.olMemcpyRect(None, ol.Rect(address, w.device, (0, 0, 0), 32, 128), ol.Rect(source, w.host, (2, 0, 0), 16, 48), (8, 3, 2))
    ol.olMemcpy(None, back, w.host, address, w.device, 256)
    got = (ctypes.c_uint8 * 256).from_address(back)
    assert [bytes(got[z * 128 + y * 32 :][:8]) for z in range(2) for y in range(3)] == [
        bytes(range(z * 48 + y * 16 + 2, z * 48 + y * 16 + 10)) for z in range(2) for y in range(3)
    ]


def _core_pool(w: World) -> None:
    queue = w.queue()
    address = ol.olMemAllocAsync(queue, A.DEVICE, 512)
    ol.olMemFreeAsync(queue, address)
    ol.olSyncQueue(queue)
    again = ol.olMemAllocAsync(queue, A.DEVICE, 512)
    assert again == address  # the core's pool handed the block out again
    ol.olMemFree(again)


def _every_defined_hook_served(w: World) -> None:
    implemented = w.device.platform.backend.implemented
    assert "served_hooks" not in implemented and {"data_fill", "create_queue", "launch_kernel"} <= implemented


FALLBACKS: dict[str, Callable[[World], Any]] = {
    "served_hooks": _every_defined_hook_served,  # every hook the backend defines is served
    "data_exchange": _exchange_bounces,  # bounced through host memory
    "kernel_params": _launch_without_params,  # the core cannot check sizes; launches still run
    "destroy_event": _destroy_without_hook,  # nothing to release
    "is_valid_binary": _no_binary_is_valid,
    "deinit_device": _shutdown_skips_deinit_device,
    "no_devices_reason": _no_note_without_hook,  # offload backends shows no note
    "mem_alloc_aligned": _aligned_from_mem_alloc,
    "mem_prefetch": _prefetch_ignored,  # a hint: ignored, as liboffload does
    "platform_info": _liboffload_platform_info,  # liboffload's placeholders
    "data_copy_rect": _rect_row_by_row,
    "native_entry_points": _data_path_through_python_hooks,
    "native_word": _data_path_through_python_hooks,  # olMemcpyRect copies row by row through data_submit
    "mem_alloc_async": _core_pool,  # olMemAllocAsync / olMemFreeAsync over mem_alloc and host calls
    "mem_free_async": _core_pool,
}


def test_every_optional_hook_is_covered() -> None:
    assert set(CALLS) | set(FALLBACKS) == set(OPTIONAL)


@pytest.mark.parametrize("hook", sorted(CALLS))
def test_missing_hook_answers_unsupported(world: World, hook: str) -> None:
    with pytest.raises(ol.OffloadError) as info:
        CALLS[hook](world)
    assert info.value.code is ol.ErrorCode.UNSUPPORTED, info.value
    assert repr(NAME) in info.value.details and repr(hook) in info.value.details, info.value.details


@pytest.mark.parametrize("hook", sorted(FALLBACKS))
def test_missing_hook_has_a_fallback(world: World, hook: str) -> None:
    FALLBACKS[hook](world)


@pytest.mark.parametrize("hook", ["enqueue_host_call"])
def test_host_to_host_copy_on_a_queue_needs_host_calls(world: World, hook: str) -> None:
    """hookspecs: a host-to-host olMemcpy on a queue is ordered with ``enqueue_host_call``."""
    with pytest.raises(ol.OffloadError) as info:
        ol.olMemcpy(world.queue(), world.buffer(), world.host, world.buffer(), world.host, 64)
    assert info.value.code is ol.ErrorCode.UNSUPPORTED and repr(hook) in info.value.details, info.value
    dst, src = (ctypes.c_uint8 * 64)(), (ctypes.c_uint8 * 64)(*range(64))
    ol.olMemcpy(None, ctypes.addressof(dst), world.host, ctypes.addressof(src), world.host, 64)
    assert list(dst) == list(range(64))  # without a queue it needs no hook
