"""offload.backend.native without a GPU: a backend whose native extension is missing, or has no
entry points, keeps the reason and hands the core no capsule and no words (the Python hooks
serve); records come from the module and ``native_word`` is their address."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from offload.backend.native import NativeExtension


class _Record:
    def __init__(self, *fields: int) -> None:
        self.fields = fields
        self.python_work = 0
        self.address = 0x1000 + len(fields)


def _fake_module(name: str, unavailable: str | None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.unavailable = unavailable  # type: ignore[attr-defined]
    module.entry_points = lambda: "capsule"  # type: ignore[attr-defined]
    module.DeviceRecord = module.QueueRecord = module.KernelRecord = _Record  # type: ignore[attr-defined]
    module.host_function = lambda callback: ("marked", callback())  # type: ignore[attr-defined]
    return module


def test_an_extension_not_built_leaves_the_python_hooks() -> None:
    native = NativeExtension("offload_no_such_backend._native")
    assert native.module is None
    assert native.reason is not None and "offload_no_such_backend._native is not built" in native.reason
    assert native.entry_points() is None
    assert native.device_record(1, 0, False) is None and native.queue_record(5) is None
    assert native.kernel_record(7, 8, 9) is None

    def callback() -> None:
        pass

    assert native.host_call(object(), callback) is callback


def test_an_extension_without_entry_points_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fake_backend_native", _fake_module("fake_backend_native", "a signature differs"))
    native = NativeExtension("fake_backend_native")
    assert native.module is None and native.entry_points() is None
    assert native.reason == "fake_backend_native has no entry points: a signature differs"


def test_records_words_and_host_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fake_backend_native", _fake_module("fake_backend_native", None))
    native = NativeExtension("fake_backend_native")
    assert native.reason is None and native.entry_points() == "capsule"
    queue: Any = types.SimpleNamespace(native_record=native.queue_record(5))
    assert queue.native_record.fields == (5,)
    assert native.device_record(1, 2, True).fields == (1, 2, 1)
    assert native.kernel_record(7, 8, 9).fields == (7, 8, 9)
    assert NativeExtension.word(queue) == queue.native_record.address
    assert NativeExtension.word(object()) is None  # no record: the Python hooks
    marked = native.host_call(queue, lambda: 42)
    assert queue.native_record.python_work == 1  # the queue's sync and pending stay with Python
    assert marked() == ("marked", 42)
