"""``offload.register_foreign_memory``: device memory another library allocated becomes copyable by
the core for as long as it is registered; nested registrations are counted; bad ranges, partial
overlaps and dead devices are refused by name. The device under test is the host backend
registered in-process under another platform name, so its memory counts as device memory."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol
from offload_host import HostBackend

from helpers import child_environ

E = ol.ErrorCode


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    monkeypatch.setenv("OFFLOAD_BACKENDS", "elsewhere,host")
    ol.register_backend("elsewhere", HostBackend)
    ol.olInit()
    try:
        found: list[Any] = []
        ol.olIterateDevices(lambda d, _: found.append(d) or True)
        device = next(d for d in found if d.platform.name == "elsewhere")
        host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
        yield device, host
    finally:
        ol.olShutDown()
        ol.unregister_backend("elsewhere")


def _read(device: Any, host: Any, address: int, size: int) -> bytes:
    out = (ctypes.c_uint8 * size)()
    ol.olMemcpy(None, ctypes.addressof(out), host, address, device, size)
    return bytes(out)


def test_registered_memory_is_copyable_while_registered(world: tuple[Any, Any]) -> None:
    device, host = world
    memory = (ctypes.c_uint8 * 256)(*range(256))  # "another library's device memory"
    base = ctypes.addressof(memory)
    with pytest.raises(ol.OffloadError) as refused:
        _read(device, host, base, 16)
    assert refused.value.code is E.INVALID_ARGUMENT and "not a live allocation" in refused.value.details
    outer = ol.register_foreign_memory(device, base, 256)
    inner = ol.register_foreign_memory(device, base + 16, 32)  # nested: counted, not registered twice
    assert outer.registered and inner.registered
    assert _read(device, host, base + 8, 16) == bytes(range(8, 24))
    queue = ol.olCreateQueue(device)  # a synchronous fill cannot tell the device of a non-allocation
    ol.olMemFill(queue, base + 16, b"\xab", 32)
    ol.olSyncQueue(queue)
    ol.olDestroyQueue(queue)
    assert bytes(memory[16:48]) == b"\xab" * 32
    with pytest.raises(ol.OffloadError) as overrun:
        _read(device, host, base + 250, 16)
    assert overrun.value.code is E.INVALID_SIZE and "foreign memory" in overrun.value.details
    outer.release()
    assert _read(device, host, base, 4) == bytes(range(4))  # inner still holds the range
    inner.release()
    inner.release()  # idempotent
    with pytest.raises(ol.OffloadError):
        _read(device, host, base, 4)


def test_what_needs_no_registration(world: tuple[Any, Any]) -> None:
    device, host = world
    own = ol.olMemAlloc(device, ol.AllocType.DEVICE, 64)
    assert not ol.register_foreign_memory(device, own, 64).registered  # offload's own allocation
    memory = (ctypes.c_uint8 * 64)()
    assert not ol.register_foreign_memory(host, ctypes.addressof(memory), 64).registered  # host memory
    ol.olMemFree(own)


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("zero size", E.INVALID_SIZE, "empty or NULL"),
        ("null", E.INVALID_ARGUMENT, "empty or NULL"),
        ("partial overlap", E.INVALID_ARGUMENT, "partly overlaps"),
        ("not a device", E.INVALID_DEVICE, "no live device"),
        ("wraps", E.INVALID_SIZE, ""),
    ],
)
def test_refusals(world: tuple[Any, Any], case: str, code: ol.ErrorCode, words: str) -> None:
    device, _ = world
    memory = (ctypes.c_uint8 * 128)()
    base = ctypes.addressof(memory)
    kept = ol.register_foreign_memory(device, base, 64)
    calls = {
        "zero size": lambda: ol.register_foreign_memory(device, base, 0),
        "null": lambda: ol.register_foreign_memory(device, 0, 16),
        "partial overlap": lambda: ol.register_foreign_memory(device, base + 32, 64),
        "not a device": lambda: ol.register_foreign_memory("elsewhere:0", base, 16),
        "wraps": lambda: ol.register_foreign_memory(device, 2**64 - 8, 16),
    }
    with pytest.raises(ol.OffloadError) as info:
        calls[case]()
    assert info.value.code is code and words in info.value.details, info.value
    kept.release()


def test_a_device_of_an_ended_session() -> None:
    ol.olInit()
    found: list[Any] = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    ol.olShutDown()
    with pytest.raises(ol.OffloadError) as info:
        ol.register_foreign_memory(found[-1], 4096, 16)
    assert info.value.code is E.INVALID_DEVICE


def _session() -> Any:
    from offload._core.runtime import STATE

    return STATE.ctx


def test_release_waits_for_the_copies_that_checked_the_range_before(world: tuple[Any, Any]) -> None:
    """A copy between its range check and its end holds (``ctx.holds``); ``release()`` refuses the
    range at once but returns only once that copy has ended, so the producer may then free it."""
    device, host = world
    memory = (ctypes.c_uint8 * 64)(*range(64))
    registration = ol.register_foreign_memory(device, ctypes.addressof(memory), 64)
    holds = _session().holds
    holds.append(None)  # a copy in flight that checked the range before the release
    done = threading.Event()
    releaser = threading.Thread(target=lambda: (registration.release(), done.set()))
    releaser.start()
    try:
        assert not done.wait(0.3), "release() returned while a copy that checked the range was still running"
        with pytest.raises(ol.OffloadError) as refused:  # a new copy is refused meanwhile
            _read(device, host, ctypes.addressof(memory), 4)
        assert refused.value.code is E.INVALID_ARGUMENT and "released by its importer" in refused.value.details
    finally:
        holds.pop()
    assert done.wait(10)
    releaser.join()
    again = ol.register_foreign_memory(device, ctypes.addressof(memory), 64)  # the range was given back
    assert _read(device, host, ctypes.addressof(memory), 4) == bytes(range(4))
    again.release()


def test_a_release_from_a_finalizer_keeps_the_producers_memory_until_the_copies_ended(world: tuple[Any, Any]) -> None:
    """``release(keep, wait=False)`` (what the object layer's finalizers call, possibly inside a
    copy's hold) returns at once and lets go of ``keep`` only once the grace period has ended."""
    device, host = world

    class Producer:
        memory = (ctypes.c_uint8 * 64)()

    producer = Producer()
    gone = threading.Event()
    weakref.finalize(producer, gone.set)
    registration = ol.register_foreign_memory(device, ctypes.addressof(producer.memory), 64)
    holds = _session().holds
    holds.append(None)
    try:
        registration.release(producer, False)
        del producer
        gc.collect()
        assert not gone.wait(0.3), "the producer was let go while a copy that checked its memory still ran"
    finally:
        holds.pop()
    assert gone.wait(10), "the producer was never let go after the grace period"


_RACE = r"""
import ctypes, mmap, threading
import offload as ol
from offload_host import HostBackend

ol.register_backend("elsewhere", HostBackend)
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
device = next(d for d in found if d.platform.name == "elsewhere")
host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
SIZE = 1 << 20
out = (ctypes.c_uint8 * SIZE)()
copied = refused = 0
for _ in range(ROUNDS):
    producer = mmap.mmap(-1, SIZE)  # "another library's device memory", unmapped once released
    view = ctypes.c_uint8.from_buffer(producer)
    base = ctypes.addressof(view)
    del view  # no export left: close() unmaps
    registration = ol.register_foreign_memory(device, base, SIZE)
    go = threading.Event()
    def copy_until_refused():
        global copied, refused
        go.set()
        while True:
            try:  # a synchronous device-to-host copy: the backend's memmove runs without the GIL
                ol.olMemcpy(None, ctypes.addressof(out), host, base, device, SIZE)
                copied += 1
            except ol.OffloadError as error:
                assert error.code is ol.ErrorCode.INVALID_ARGUMENT, error
                refused += 1
                return
    copier = threading.Thread(target=copy_until_refused)
    copier.start()
    go.wait()
    registration.release()  # returns once the copies that checked the range have ended
    producer.close()  # munmap: a copy still reading it would fault
    copier.join()
ol.olShutDown()
ol.unregister_backend("elsewhere")
print("copied", copied, "refused", refused)
"""


@pytest.mark.parametrize("compiled", ["1", "0"], ids=["compiled", "python"])
def test_memory_freed_right_after_release_is_never_read_by_a_copy_in_flight(compiled: str) -> None:
    """The producer unmaps its memory as soon as ``release()`` returns, while another thread keeps
    copying from it: each copy is done whole or refused, never a fault (a child process)."""
    env = child_environ()
    env.update(OFFLOAD_COMPILED=compiled, OFFLOAD_BACKENDS="elsewhere,host")
    proc = subprocess.run(
        [sys.executable, "-c", "ROUNDS = 40\n" + _RACE], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "refused 40" in proc.stdout, proc.stdout
