"""What the tests of the core's contracts share (tests/hardening/test_contracts_*.py): the error a
call raises, and a three-dimensional launch size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import offload as ol


def raised(call: Callable[..., Any], *args: Any) -> ol.OffloadError:
    """The OffloadError ``call(*args)`` raises (the test fails if it raises none)."""
    with pytest.raises(ol.OffloadError) as info:
        call(*args)
    return info.value


def launch_size(groups: tuple[int, int, int] = (1, 1, 1), items: tuple[int, int, int] = (1, 1, 1)) -> ol.KernelLaunchSizeArgs:
    """A 3-dimensional launch of ``groups`` groups of ``items`` items, no dynamic local memory."""
    return ol.KernelLaunchSizeArgs(3, groups, items)
