"""Waiting for work before a teardown, with a way out: a deadline and Ctrl-C.

The final ``olShutDown`` waits for the calls other threads are inside and for every queue's work
before it releases anything. Work that never ends (a host function waiting for ever, a cooperative
launch whose groups never meet at the barrier) would hold it for ever, so each wait polls (the
backend's ``has_pending_work`` must not block) and gives up when

- the deadline passes: ``OFFLOAD_SHUTDOWN_TIMEOUT`` seconds (a number >= 0) after the teardown
  started; unset, the wait has no deadline;
- or Ctrl-C arrives twice (SIGINT is held on the main thread during the teardown and counted:
  ``interrupts``). The first one only says on stderr what is being waited for and that a second
  Ctrl-C stops waiting: work that finishes is still released whole, leaking nothing.

Once given up, every later wait of the same teardown looks once and does not wait. What was still
pending is reported as one ``OL_ERRC_BACKEND_FAILURE`` error (``stuck_error``), and whatever the
stuck work may still be using is left in place rather than released under it.

``RUNNING_HOST_FUNCTIONS`` names the host function each queue is running (set and cleared by the
core's host-function wrapper), so the report says what the work is where the core knows it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError

SHUTDOWN_TIMEOUT_ENV = "OFFLOAD_SHUTDOWN_TIMEOUT"

#: ``id(native queue)`` -> the qualified name of the host function running on it now
RUNNING_HOST_FUNCTIONS: dict[int, str] = {}


def host_function_name(callback: Any) -> str:
    """What a report calls a host function: its qualified name, else its repr."""
    name = getattr(callback, "__qualname__", None)
    module = getattr(callback, "__module__", None)
    if isinstance(name, str):
        return f"{module}.{name}" if isinstance(module, str) and module != "builtins" else name
    return repr(callback)


def shutdown_timeout(errors: list[OffloadError]) -> float | None:
    """``OFFLOAD_SHUTDOWN_TIMEOUT`` in seconds (None: unset or empty). A value that is not a number
    >= 0 is reported in ``errors`` and the wait has no deadline."""
    text = os.environ.get(SHUTDOWN_TIMEOUT_ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0.0 or value == float("inf"):  # NaN and inf too
        errors.append(OffloadError(ErrorCode.INVALID_ARGUMENT,
                                   f"{SHUTDOWN_TIMEOUT_ENV}={text!r} is not a number of seconds >= 0: olShutDown "
                                   "waited without a deadline"))  # fmt: skip
        return None
    return value


class Drain:
    """The waits of one teardown: a shared deadline, and Ctrl-C twice."""

    __slots__ = ("deadline", "timeout", "interrupts", "given_up", "told")

    def __init__(self, timeout: float | None, interrupts: Callable[[], int]) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.interrupts = interrupts
        self.given_up: str | None = None  # why the waiting stopped; None while it goes on
        self.told = False  # the first Ctrl-C's message was printed

    def wait(self, busy: Callable[[], bool], what: Callable[[], str] = lambda: "queued work") -> bool:
        """Poll ``busy()`` until it is False (True) or the teardown gives up waiting (False);
        ``what()`` names what is waited for, for the message after the first Ctrl-C."""
        delay = 0.0002
        while busy():
            if self.given_up is not None:
                return False
            interrupts = self.interrupts()
            if interrupts >= 2:
                self.given_up = "interrupted (Ctrl-C twice)"
                return False
            if interrupts and not self.told:
                self.told = True
                print(f"offload: olShutDown is waiting for {what()}; press Ctrl-C again to stop waiting "
                      "(what is pending is then left in place and reported)", file=sys.stderr, flush=True)  # fmt: skip
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                self.given_up = f"{SHUTDOWN_TIMEOUT_ENV}={self.timeout:g} s passed"
                return False
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, 0.01)
        return True


def pending_work(native_queue: Any) -> str:
    """What the core knows is pending on a queue that did not finish."""
    running = RUNNING_HOST_FUNCTIONS.get(id(native_queue))
    if running is not None:
        return f"host function {running} running"
    return "device work (launches, copies or fills) not finished"


def stuck_error(drain: Drain, stuck: list[str], kept: list[str]) -> OffloadError:
    """The report of a teardown that stopped waiting: what was pending, and what was left in place."""
    details = f"olShutDown stopped waiting ({drain.given_up}); still pending: {'; '.join(stuck)}"
    if kept:
        details += f". Left in place, not released (the pending work may still use it): {'; '.join(kept)}"
    return OffloadError(ErrorCode.BACKEND_FAILURE, details)
