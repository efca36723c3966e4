"""Shared helpers of the conformance suite (not tests)."""

from __future__ import annotations

import contextlib
import ctypes
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import offload as ol
from offload.testing import capabilities_for
from offload_testing.plugin import DeviceMemory as DeviceMemory, implemented_hooks, require as require  # noqa: F401 (re-exported to the suite)

#: Applied to every suite class: the plugin parametrises ``device`` only for marked tests.
conformance = pytest.mark.offload_conformance

NULL_HANDLE = ol.ErrorCode.INVALID_NULL_HANDLE
NULL_POINTER = ol.ErrorCode.INVALID_NULL_POINTER
FORCE_UINT32 = 0x7FFFFFFF


@contextlib.contextmanager
def raises(code: ol.ErrorCode) -> Iterator[pytest.ExceptionInfo[ol.OffloadError]]:
    """Expect an ``OffloadError`` with ``code`` (liboffload's ASSERT_ERROR)."""
    with pytest.raises(ol.OffloadError) as info:
        yield info
    assert info.value.code == code, f"expected OL_ERRC_{code.name}, got {info.value}"


def destroyed_twice(handle: Any, destroy: Callable[[Any], None], code: ol.ErrorCode) -> None:
    """``destroy(handle)`` succeeds once; the second is refused with ``code`` (liboffload's
    InvalidXxx after a destroy: the handle is no longer valid)."""
    destroy(handle)
    with raises(code):
        destroy(handle)


def implemented(device: Any) -> frozenset[str]:
    """The hooks the backend of ``device`` implements."""
    return implemented_hooks(device.platform)


def expect_unsupported(device: Any, hooks: Sequence[str], fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` must fail with ``OL_ERRC_UNSUPPORTED`` (the feature is absent); when the
    backend lacks one of ``hooks``, the message must name the backend and that hook (the core's
    answer)."""
    try:
        fn(*args)
    except ol.OffloadError as exc:
        error = exc
    else:
        pytest.fail(
            f"{fn.__name__} succeeded, but the capabilities say its feature is absent: "
            "drop the False declaration (or make the hook raise UNSUPPORTED)"
        )
    assert error.code == ol.ErrorCode.UNSUPPORTED, f"{fn.__name__}: expected OL_ERRC_UNSUPPORTED, got {error}"
    lacking = [hook for hook in hooks if hook not in implemented(device)]
    if lacking:
        name = device.platform.name
        assert name in error.details, f"{fn.__name__}: the UNSUPPORTED message does not name backend {name!r}: {error}"
        assert any(hook in error.details for hook in lacking), (
            f"{fn.__name__}: the UNSUPPORTED message names none of the missing hooks {lacking}: {error}"
        )


def launch(groups: int = 1, group_size: int = 64, dyn: int = 0) -> ol.KernelLaunchSizeArgs:
    """liboffload's default launch: 1-D, ``groups`` groups of ``group_size`` items."""
    return ol.KernelLaunchSizeArgs(1, (groups, 1, 1), (group_size, 1, 1), dyn)


def ptr_arg(address: int) -> bytes:
    """The argument struct of a kernel taking one pointer."""
    return struct.pack("P", address)


def u32s(address: int, count: int) -> list[int]:
    """``count`` uint32 read directly at ``address``: MANAGED or HOST memory only, in the cases
    that test host access to it (every other result is read with ``DeviceMemory``)."""
    return list((ctypes.c_uint32 * count).from_address(address))


def symbol_name(program: Any, name: str) -> str:
    """The test programs' symbol ``name`` as the backend of ``program`` spells it
    (``Capabilities.symbol``)."""
    return capabilities_for(program.device.platform.name).symbol(name) if program is not None else name


def kernel(program: Any, name: str) -> Any:
    return ol.olGetSymbol(program, symbol_name(program, name), ol.SymbolKind.KERNEL)


def global_variable(program: Any, name: str) -> Any:
    return ol.olGetSymbol(program, symbol_name(program, name), ol.SymbolKind.GLOBAL_VARIABLE)


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until it is true (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.001)
    return predicate()


def fibonacci(count: int) -> list[int]:
    values = [0, 1]
    while len(values) < count:
        values.append(values[-1] + values[-2])
    return values[:count]


class SequenceArgs(ctypes.Structure):
    """``sequence(uint32_t idx, uint32_t *inout)``."""

    _fields_ = [("idx", ctypes.c_uint32), ("inout", ctypes.c_void_p)]


class SingleCounterArgs(ctypes.Structure):
    """``single_counter(int32_t init_loop, int32_t addend, uint32_t *init_val, uint32_t *out)``."""

    _fields_ = [
        ("init_loop", ctypes.c_int32),
        ("addend", ctypes.c_int32),
        ("init_val", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
    ]


class MultiArgs(ctypes.Structure):
    """``multiargs(char A, int *B, short C)``."""

    _fields_ = [("A", ctypes.c_char), ("B", ctypes.c_void_p), ("C", ctypes.c_short)]


class BlockedQueue:
    """liboffload's ManuallyTriggeredTask: a host callback on ``queue`` that blocks until
    ``trigger()`` (or ``timeout`` seconds, so a failing test never hangs the queue for ever)."""

    def __init__(self, queue: Any, timeout: float = 10.0) -> None:
        self.queue = queue
        self.started = threading.Event()
        self.release = threading.Event()
        self.timed_out = False
        self._timeout = timeout
        ol.olLaunchHostFunction(queue, self._block, None)

    def _block(self, _user_data: Any) -> None:
        self.started.set()
        if not self.release.wait(self._timeout):
            self.timed_out = True

    def trigger(self) -> None:
        self.release.set()
        ol.olSyncQueue(self.queue)
        assert not self.timed_out, "the blocking host callback timed out before trigger()"

    def __enter__(self) -> BlockedQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()  # never leave the queue blocked, even when the test failed


@conformance
class Base:
    """Base of every suite class: each test runs inside the plugin's olInit session."""

    @pytest.fixture(autouse=True)
    def _offload_session(self, ol_session: list[Any]) -> None:
        return None


class InfoQueryRefusals(Base):
    """liboffload's InvalidNullHandle and InvalidEnumeration cases of one ``olGet<X>Info`` or
    ``olGet<X>InfoSize`` query, written once: a null handle is ``OL_ERRC_INVALID_NULL_HANDLE``, an
    info value outside the enumeration ``OL_ERRC_INVALID_ENUMERATION``. A subclass names the
    ``query`` (a function of ``offload``), a ``valid`` info value and the fixture that gives a
    ``subject`` handle to ask."""

    query: str
    valid: Any
    subject: str

    def test_invalid_null_handle(self) -> None:
        with raises(NULL_HANDLE):
            getattr(ol, self.query)(None, self.valid)

    def test_invalid_info_enumeration(self, device: Any, request: pytest.FixtureRequest) -> None:
        subject = request.getfixturevalue(self.subject)  # ``device`` above: parametrised like it
        with raises(ol.ErrorCode.INVALID_ENUMERATION):
            getattr(ol, self.query)(subject, FORCE_UINT32)
