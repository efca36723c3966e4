"""The host-mapping check of copies (``_core.ranges.HostMappings``): a range that a re-read of the
mappings found stays found when another thread's ``forget()`` (memory given back) empties the view
as soon as the re-read lets go of the lock (tests/capi's C threads hit it: a thread's stack buffer
refused as "not mapped readable host memory" while other threads freed)."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from offload._core.ranges import READ, HostMappings


class _ForgetOnRelease:
    """A lock after whose release a ``forget()`` runs at once (the interleaving of the race)."""

    def __init__(self, mappings: HostMappings) -> None:
        self.lock = threading.Lock()
        self.mappings = mappings

    def __enter__(self) -> None:
        self.lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()
        self.mappings.view = ((), (), ())  # what forget() leaves


def test_a_forget_right_after_the_re_read_is_no_miss() -> None:
    buffer = ctypes.create_string_buffer(64)
    start = ctypes.addressof(buffer)
    mappings = HostMappings()
    mappings._lock = _ForgetOnRelease(mappings)  # type: ignore[assignment]
    assert mappings.check(start, start + 64, READ)
    assert mappings.view == ((), (), ())  # the forget did run: the answer came from the re-read's view
