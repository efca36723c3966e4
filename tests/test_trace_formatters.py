"""The per-function trace formatters (``_trace.formatters``, made once from the table) print every
call exactly as ``_trace.params.trace_params`` does: every function of the table, both API levels,
succeeded and failed, with live handles, enum members, raw numbers (known and unknown), None,
buffers, sequences and values of the wrong type."""

from __future__ import annotations

import itertools
import re
import random
from typing import Any

import pytest

import offload as ol
from offload._api.binding import FUNCTION
from offload._trace.formatters import formatter, join, text_formatter
from offload._trace.params import trace_params
from offload._values import enums


@pytest.fixture(scope="module")
def handles() -> list[Any]:
    from offload_host import build_test_kernel

    ol.olInit()
    found: list[Any] = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    device = found[-1]
    queue = ol.olCreateQueue(device)
    program = ol.olCreateProgram(device, build_test_kernel("noargs"))
    kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
    event = ol.olCreateEvent(queue)
    platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
    yield [device, queue, program, kernel, event, platform]
    ol.olSyncQueue(queue)
    ol.olDestroyEvent(event)
    ol.olDestroyQueue(queue)
    ol.olDestroyProgram(program)
    ol.olShutDown()


def _values(handles: list[Any]) -> list[Any]:
    members = [m for cls in (ol.DeviceInfo, ol.PlatformInfo, ol.AllocType, ol.SymbolKind, ol.MemInfo, ol.QueueInfo, ol.EventInfo, ol.SymbolInfo) for m in cls]
    flags = [cls(1) for cls in vars(enums).values() if isinstance(cls, type) and issubclass(cls, __import__("enum").IntFlag) and cls is not __import__("enum").IntFlag and len(cls)]
    return [
        *handles, *members, *flags, None, 0, 1, 7, 4096, 0x1000_0000, 12345678, -1, True, False, 2.5, "name",
        b"\x01\x02\x03\x04", bytearray(8), [handles[4]], (), [1, 2], object(), ol.KernelLaunchSizeArgs(1, (2, 1, 1), (4, 1, 1)),
    ]


def _masked(params: Any, known: set[str]) -> Any:
    """The addresses of temporaries (main's ArgPtrs / ArgSizes arrays) as 0xADDR; those of the
    arguments, the result and the out-parameter kept."""
    if not isinstance(params, dict):
        return params
    return {k: re.sub(r"0x[0-9a-f]{9,}", lambda m: m.group() if m.group() in known else "0xADDR", v) for k, v in params.items()}


@pytest.mark.parametrize("level", ["r1", "main"])
def test_formatters_print_what_trace_params_prints(handles: list[Any], level: str) -> None:
    values = _values(handles)
    rng = random.Random(32)
    results = [None, "host", 5, handles[0], 0x7F00, True, 1.5, [handles[0]], ol.PlatformBackend.HOST]
    checked = 0
    for fn in FUNCTION.values():
        n = len(fn.params)
        tuples = [tuple(rng.choice(values) for _ in range(n)) for _ in range(60)]
        for i, param in enumerate(fn.params):  # every value in every position at least once
            tuples += [tuple(rng.choice(values) if j != i else v for j in range(n)) for v in values]
        for args, result, ok in itertools.product(tuples, results[:3], (True, False)):
            if rng.random() < 0.7:
                result = rng.choice(results)
            try:
                want: Any = trace_params(fn, args, result, ok, level)
            except Exception as error:  # noqa: BLE001 - then the formatter raises the same
                want = type(error)
            try:
                got: Any = formatter(fn, level)(args, result, ok)
            except Exception as error:  # noqa: BLE001
                got = type(error)
            known = {hex(id(v)) for v in (*args, result, fn.out)}
            assert _masked(got, known) == _masked(want, known), (fn.name, level, args, result, ok)
            if isinstance(want, dict):
                assert list(got) == list(want), (fn.name, level)  # the order the line prints them in
                text = text_formatter(fn, level)(args, result, ok)
                assert _masked({"": text}, known) == _masked({"": join(want)}, known), (fn.name, level, args, result, ok)
            checked += 1
    assert checked > 10_000
