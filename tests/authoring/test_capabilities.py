"""``Capabilities.resolve``: flags derived from the hooks, declarations kept, reasons given."""

from __future__ import annotations

import pytest

from offload.hookspecs import HOOK_NAMES, REQUIRED_HOOKS
from offload.testing import FEATURES, Capabilities
from offload.testing._capabilities import contradictions, partial_groups

EVERYTHING = frozenset(HOOK_NAMES)


def test_every_optional_hook_belongs_to_a_feature() -> None:
    covered = {hook for feature in FEATURES for hook in feature.hooks}
    # the core has a fallback for these (the native entry points: the Python hooks) (hookspecs' docstring): nothing to declare; building from
    # source is offload.build's, not the API's (absent: UNSUPPORTED, tests/authoring/test_missing_hooks.py)
    assert set(HOOK_NAMES) - REQUIRED_HOOKS - covered == {
        "build_source",
        "build_target",
        "data_copy_rect",
        "foreign_stream_sync",
        "foreign_stream_wait",
        "queue_stream",  # streams shared with other libraries (docs/interop.md)
        "adopt_stream",
        "mem_alloc_async",  # absent: the core's pool over mem_alloc (olMemAllocAsync works everywhere)
        "mem_free_async",
        "deinit_device",
        "destroy_event",
        "is_valid_binary",
        "native_entry_points",  # absent: the compiled core calls the Python hooks
        "native_word",
        "no_devices_reason",
        "platform_info",
        "served_hooks",  # narrows the hooks, so the flags, after init
    }


def test_all_hooks_make_every_flag_true() -> None:
    resolved = Capabilities().resolve(EVERYTHING)
    assert all(getattr(resolved, f.flag) is True for f in FEATURES)


def test_required_hooks_only_make_every_flag_false_with_a_reason() -> None:
    resolved = Capabilities().resolve(REQUIRED_HOOKS)
    assert all(getattr(resolved, f.flag) is False for f in FEATURES)
    assert resolved.why_absent("memory") == "capabilities.memory is False (the backend does not implement mem_alloc, mem_free)"
    assert resolved.why_absent("host_functions") == "capabilities.host_functions is False (capabilities.queues is False)"
    assert "data_exchange" in resolved.why_absent("device_to_device")


@pytest.mark.parametrize(
    ("missing", "flag"),
    [
        ({"create_event"}, "events"),
        ({"event_elapsed_time"}, "events_elapsed_time"),
        ({"enqueue_host_call"}, "host_functions"),
        ({"mem_register"}, "mem_register"),
        ({"data_fill"}, "fill"),
        ({"launch_kernel"}, "kernel_launch"),
        ({"max_group_size"}, "occupancy"),
        ({"kernel_params"}, "kernel_params"),
        ({"get_kernel", "get_global"}, "programs"),
        ({"create_queue"}, "events"),  # events need queues
    ],
)
def test_one_group_missing(missing: set[str], flag: str) -> None:
    resolved = Capabilities().resolve(EVERYTHING - missing)
    assert getattr(resolved, flag) is False
    assert resolved.memory is True


def test_device_to_device_falls_back_to_copies() -> None:
    assert Capabilities().resolve(EVERYTHING - {"data_exchange"}).device_to_device is True
    lacking = EVERYTHING - {"data_exchange", "data_submit"}
    assert Capabilities().resolve(lacking).device_to_device is False


def test_declarations_win_and_are_named() -> None:
    class Limited(Capabilities):
        managed_memory = False
        events = True

    resolved = Limited().resolve(EVERYTHING)
    assert resolved.managed_memory is False and resolved.host_memory is True
    assert resolved.why_absent("managed_memory") == "capabilities.managed_memory is False (declared False by Limited)"
    assert Limited.managed_memory is False and Capabilities.memory is None  # resolve copies; classes untouched


def test_contradictions() -> None:
    class Wrong(Capabilities):
        events = True
        host_functions = True

    found = contradictions(Wrong(), EVERYTHING - {"create_event", "create_queue"})
    assert "Wrong.events is True but the backend does not implement create_event" in found
    assert any(s.startswith("Wrong.host_functions is True but it needs capabilities.queues is False") for s in found)
    assert contradictions(Wrong(), EVERYTHING) == []


def test_partial_groups() -> None:
    assert partial_groups(EVERYTHING) == []
    assert partial_groups(REQUIRED_HOOKS) == []
    assert partial_groups(EVERYTHING - {"wait_event"}) == [
        "events: the backend implements create_event, is_event_complete, sync_event but not wait_event"
    ]
    assert partial_groups(EVERYTHING - {"max_group_size"}) == []  # occupancy: get_kernel serves launches too


def test_symbol_aliases_map_the_test_programs_symbols() -> None:
    """A backend whose language cannot spell a test symbol (``global`` in OpenCL C) maps it."""

    class Mapped(Capabilities):
        symbol_aliases = {"global": "global_"}

    assert Mapped().symbol("global") == "global_" and Mapped().symbol("foo") == "foo"
    assert Capabilities().symbol("global") == "global"


def test_globals_and_constructors_are_their_own_flags() -> None:
    kernels_only = Capabilities().resolve(EVERYTHING - {"get_global"})
    assert kernels_only.programs and not kernels_only.globals and kernels_only.constructors
    assert "get_global" in kernels_only.why_absent("globals")

    class NoConstructors(Capabilities):
        constructors = False

    resolved = NoConstructors().resolve(EVERYTHING)
    assert resolved.globals and not resolved.constructors
    assert "declared False" in resolved.why_absent("constructors")
