"""Upstream cases that need a session of their own, run in a child process (``_child``) on the
device under test: the semantics of API level ``main`` (the suite's session is at ``r1``, where
R1's behaviour holds), and olMemFill with validation off (``OFFLOAD_DISABLE_VALIDATION`` is read
when a session starts).

Each class runs one child per device and caches its answers; each test checks one of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._child import run_on_device
from ._helpers import Base, require

#: At level main, on ``device``: the outcome of each refused call (the names in ``result``).
_MAIN_LEVEL = r"""
A = ol.AllocType
if os.environ["KIT_MEMORY"] == "1":
    # olMemAllocTest.InvalidHostType, olMemAllocAlignedTest.InvalidHostType
    result["alloc_host"] = outcome(ol.olMemAlloc, device, A.HOST, 1024)
    result["aligned_host"] = outcome(ol.olMemAllocAligned, device, A.HOST, 1024, 16)
if os.environ["KIT_ELAPSED"] == "1":
    # olGetEventElapsedTimeTest.InvalidNonProfilingEvent, and Success beside it
    queue = ol.olCreateQueue(device)
    plain = [ol.olCreateEvent(queue, ol.EventFlags.NONE) for _ in range(2)]
    timed = [ol.olCreateEvent(queue, ol.EventFlags.ENABLE_PROFILING) for _ in range(2)]
    ol.olSyncEvent(timed[1])
    result["non_profiling"] = outcome(ol.olGetEventElapsedTime, *plain)
    result["profiling"] = ol.olGetEventElapsedTime(*timed)
    for event in plain + timed:
        ol.olDestroyEvent(event)
    ol.olDestroyQueue(queue)
"""

#: With validation off, upstream's olMemFillHostRemainderTest: a canary fill of the 16 bytes,
#: then a 4-byte pattern over 5 and over 3 of them, on a queue of a context over the device (DEVICE
#: memory, read back with olMemcpy).
_PARTIAL_FILL = r"""
import ctypes
context = ol.olCreateContext([device])
queue = ol.olCreateQueue(context, device)
alloc = ol.olMemAlloc(device, ol.AllocType.DEVICE, 16)
out = ctypes.create_string_buffer(16)
for name, fill_size in (("remainder", 5), ("larger", 3)):
    ol.olMemFill(queue, alloc, b"\xaa", 16)
    ol.olMemFill(queue, alloc, bytes([1, 2, 3, 4]), fill_size)
    ol.olMemcpy(queue, ctypes.addressof(out), host_device, alloc, device, 16)
    ol.olSyncQueue(queue)
    result[name] = out.raw.hex()
ol.olMemFree(alloc)
ol.olDestroyQueue(queue)
ol.olDestroyContext(context)
"""

_answers: dict[tuple[str, str, int], dict[str, Any]] = {}


def _answer(key: str, device: Any, body: str, level: str, env: dict[str, str]) -> dict[str, Any]:
    """The child's result for ``device`` (one child per device and kind of case)."""
    ident = (key, device.platform.name, device.index)
    if ident not in _answers:
        _answers[ident] = run_on_device(device, body, level, env)
    return _answers[ident]


class TestMainLevelSemantics(Base):
    """API level main's refusals, on every device (at r1 the same calls succeed: the rest of the kit)."""

    @pytest.fixture
    def main(self, device: Any, capabilities: Any) -> dict[str, Any]:
        env = {
            "KIT_MEMORY": "1" if capabilities.memory else "0",
            "KIT_ELAPSED": "1" if capabilities.events_elapsed_time else "0",
        }
        return _answer("main", device, _MAIN_LEVEL, "main", env)

    def test_mem_alloc_invalid_host_type(self, capabilities: Any, main: dict[str, Any]) -> None:
        """olMemAllocTest.InvalidHostType: olMemAlloc(HOST) is INVALID_ENUMERATION (use olMemAllocHost)."""
        require(capabilities, "memory")
        assert main["alloc_host"] == "INVALID_ENUMERATION"

    def test_mem_alloc_aligned_invalid_host_type(self, capabilities: Any, main: dict[str, Any]) -> None:
        """olMemAllocAlignedTest.InvalidHostType."""
        require(capabilities, "memory")
        assert main["aligned_host"] == "INVALID_ENUMERATION"

    def test_elapsed_time_invalid_non_profiling_event(self, capabilities: Any, main: dict[str, Any]) -> None:
        """olGetEventElapsedTimeTest.InvalidNonProfilingEvent: events made with EventFlags.NONE are
        INVALID_ARGUMENT; the same pair made with ENABLE_PROFILING times (>= 0)."""
        require(capabilities, "events_elapsed_time")
        assert main["non_profiling"] == "INVALID_ARGUMENT"
        assert main["profiling"] >= 0.0


class TestMemFillValidationOff(Base):
    """olMemFillHostRemainderTest (upstream runs it on the host device; the kit on every device):
    with validation off a FillSize that is no multiple of PatternSize writes the last pattern in
    part, and nothing past FillSize."""

    @pytest.fixture
    def filled(self, device: Any, capabilities: Any, request: pytest.FixtureRequest) -> dict[str, Any]:
        for flag in ("fill", "queues", "memory", "copies"):
            require(capabilities, flag, "fills DEVICE memory and reads it back with olMemcpy")
        request.getfixturevalue("host_device")  # the child copies the result to host memory
        return _answer("fill", device, _PARTIAL_FILL, "main", {"OFFLOAD_DISABLE_VALIDATION": "1"})

    def test_remainder_does_not_write_past_fill_size(self, filled: dict[str, Any]) -> None:
        assert bytes.fromhex(filled["remainder"]) == bytes([1, 2, 3, 4, 1]) + b"\xaa" * 11

    def test_pattern_larger_than_fill_size(self, filled: dict[str, Any]) -> None:
        assert bytes.fromhex(filled["larger"]) == bytes([1, 2, 3]) + b"\xaa" * 13
