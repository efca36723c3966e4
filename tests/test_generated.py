"""The generated ol* functions as a module on disk (``offload._api.generated``, written from the
table by ``python -m offload._api.codegen``): the checked-in file is what the table gives, the
installed package carries the same file, a traceback through an ol* function shows its line, and
the benchmarks' variant without tracing is compiled from the same generator."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

import offload as ol
from offload._api import codegen, functions, generated, table

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "core" / "src" / "offload" / "_api" / "generated.py"


def test_the_checked_in_module_is_what_the_table_gives() -> None:
    assert SOURCE.read_text() == codegen.module_source(), "run: python -m offload._api.codegen"
    assert codegen.main(["--check", str(SOURCE)]) == 0


def test_a_table_change_is_drift(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(codegen, "FUNCTIONS", tuple(f for f in table.FUNCTIONS if f.name != "olMemFree"))
    assert codegen.module_source() != SOURCE.read_text()
    assert codegen.main(["--check", str(SOURCE)]) == 1
    rewritten = tmp_path / "generated.py"
    assert codegen.main([str(rewritten)]) == 0 and codegen.main(["--check", str(rewritten)]) == 0


def test_the_installed_module_is_the_same_file() -> None:
    assert Path(generated.__file__).read_text() == SOURCE.read_text()


def test_the_public_functions_are_the_modules_bound_by_name() -> None:
    bound = functions.generate()
    assert set(bound) == {fn.name for fn in table.FUNCTIONS}
    memcpy = bound["olMemcpy"]
    assert memcpy is generated.olMemcpy and memcpy.__code__.co_filename == generated.__file__
    assert memcpy.__module__ == "offload" and memcpy.__qualname__ == "olMemcpy" and memcpy.__doc__
    python = getattr(ol.olMemcpy, "fallback", ol.olMemcpy)  # the compiled one keeps it as its fallback
    assert python is memcpy


def _frames_in_generated(error: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(error.__traceback__) if f.filename == generated.__file__]


def test_a_traceback_through_an_ol_function_shows_its_line(host: ol.Device) -> None:
    with pytest.raises(ol.OffloadError) as refused:  # refused by the generated validation itself
        ol.olMemAlloc(host, ol.AllocType.DEVICE, 0)
    frames = _frames_in_generated(refused.value)
    assert frames and frames[-1].line == "raise _OffloadError(8, 'validation failure: Size == 0')"
    assert frames[-1].name in ("olMemAlloc", "_body_olMemAlloc")
    assert "validation failure: Size == 0" in "".join(traceback.format_exception(refused.value))
    with pytest.raises(ol.OffloadError) as failed:  # raised by the implementation, through the generated call
        ol.olMemFree(0x1234)
    lines = [f.line for f in _frames_in_generated(failed.value)]
    assert "return _impl_olMemFree(ctx, address, context)" in lines, lines


def test_without_tracing_the_functions_are_compiled_from_the_same_generator(host: ol.Device) -> None:
    untraced = functions.generate(trace=False)
    assert set(untraced) == {fn.name for fn in table.FUNCTIONS}
    alloc = untraced["olMemAlloc"]
    assert alloc is not generated.olMemAlloc and alloc.__code__.co_filename == "<offload entry point olMemAlloc>"
    assert alloc.__module__ == "offload" and alloc.__doc__ == generated.olMemAlloc.__doc__
    address = alloc(host, ol.AllocType.HOST, 64)
    ol.olMemFree(address)
