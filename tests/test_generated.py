"""The generated ol* functions as modules on disk (the package ``offload._api.generated``, written
from the table by ``python -m offload._api.codegen``, a module per group of ``_api`` sections): the
checked-in files are what the table gives, none over ``codegen.MODULE_LINES``, each holding the
functions its ``_api`` sections implement; the installed package carries the same files, a traceback
through an ol* function shows its line (with tracing on too), and the benchmarks' variant without
tracing is compiled from the same generator."""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import offload as ol
from offload._api import codegen, functions, generated, implementations, table

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "core" / "src" / "offload" / "_api" / "generated"
INSTALLED = Path(generated.__file__).parent


def test_the_checked_in_modules_are_what_the_table_gives() -> None:
    expected = codegen.module_sources()
    assert sorted(p.name for p in SOURCE.glob("*.py")) == sorted(expected), "run: python -m offload._api.codegen"
    for name, text in expected.items():
        assert (SOURCE / name).read_text() == text, f"{name}: run python -m offload._api.codegen"
    assert codegen.main(["--check", str(SOURCE)]) == 0


def test_no_generated_module_is_over_the_limit() -> None:
    sizes = {name: len(text.splitlines()) for name, text in codegen.module_sources().items()}
    assert max(sizes.values()) <= codegen.MODULE_LINES == 400, sizes


def test_a_table_change_is_drift(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(codegen, "FUNCTIONS", tuple(f for f in table.FUNCTIONS if f.name != "olMemFree"))
    assert codegen.module_sources() != {p.name: p.read_text() for p in SOURCE.glob("*.py")}
    assert codegen.main(["--check", str(SOURCE)]) == 1
    rewritten = tmp_path / "generated"
    assert codegen.main([str(rewritten)]) == 0 and codegen.main(["--check", str(rewritten)]) == 0
    (rewritten / "gone.py").write_text("# a module the table no longer gives\n")
    assert codegen.main(["--check", str(rewritten)]) == 1  # a stale module is drift
    assert codegen.main([str(rewritten)]) == 0 and not (rewritten / "gone.py").exists()


def test_the_installed_package_is_the_same_files() -> None:
    assert sorted(p.name for p in INSTALLED.glob("*.py")) == sorted(p.name for p in SOURCE.glob("*.py"))
    for source in SOURCE.glob("*.py"):
        assert (INSTALLED / source.name).read_text() == source.read_text(), source.name


def test_each_module_holds_the_functions_of_its_sections() -> None:
    """A generated module (``codegen.MODULES``) holds the functions that its
    ``_api`` sections implement, as ``_api.implementations`` finds them."""
    for fn in table.FUNCTIONS:
        module = getattr(generated, fn.name).__globals__["__name__"].rpartition(".")[2]
        section = codegen.section_of(fn.name)
        assert module.split("_")[0] == codegen.module_of(fn.name) and section in codegen.MODULES[codegen.module_of(fn.name)]
        info = re.fullmatch(r"olGet(\w+?)Info(Size)?", fn.name)  # made from the section's query
        implemented = implementations.INFO_QUERIES[info[1]] if info else implementations.implementation(fn.name)
        assert implemented.__module__ == f"offload._api.{section}", (fn.name, implemented.__module__)


def _module_file(public: Callable[..., Any]) -> str:
    return str(public.__globals__["__file__"])


def test_the_public_functions_are_the_modules_bound_by_name() -> None:
    bound = functions.generate()
    assert set(bound) == {fn.name for fn in table.FUNCTIONS}
    memcpy = bound["olMemcpy"]
    assert memcpy is generated.olMemcpy and memcpy.__code__.co_filename == _module_file(memcpy)
    assert Path(memcpy.__code__.co_filename).parent == INSTALLED
    assert memcpy.__module__ == "offload" and memcpy.__qualname__ == "olMemcpy" and memcpy.__doc__
    python = getattr(ol.olMemcpy, "fallback", ol.olMemcpy)  # the compiled one keeps it as its fallback
    assert python is memcpy


def _frames_in_generated(error: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).parent == INSTALLED]


def test_a_traceback_through_an_ol_function_shows_its_line(host: ol.Device) -> None:
    with pytest.raises(ol.OffloadError) as refused:  # refused by the generated validation itself
        ol.olMemAlloc(host, ol.AllocType.DEVICE, 0)
    frames = _frames_in_generated(refused.value)
    assert frames and frames[-1].line == "if size == 0: raise _OffloadError(8, 'validation failure: Size == 0')"
    assert frames[-1].name == "olMemAlloc"
    assert "validation failure: Size == 0" in "".join(traceback.format_exception(refused.value))
    with pytest.raises(ol.OffloadError) as failed:  # raised by the implementation, through the generated call
        ol.olMemFree(0x1234)
    lines = [f.line for f in _frames_in_generated(failed.value)]
    assert "return _impl_olMemFree(ctx, address, context)" in lines, lines


TRACED = r"""
import json, traceback
from pathlib import Path
import offload as ol
from offload._api import generated
folder = Path(generated.__file__).parent
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True, None)
host = next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)
frames = []
for call in (lambda: ol.olMemAlloc(host, ol.AllocType.DEVICE, 0), lambda: ol.olMemFree(0x1234)):
    try:
        call()
    except ol.OffloadError as error:
        frames.append([[f.name, f.line, Path(f.filename).parent == folder] for f in traceback.extract_tb(error.__traceback__)])
ol.olShutDown()
print(json.dumps(frames))
"""


def test_a_traced_calls_traceback_shows_the_same_lines(run_python: Callable[..., Any]) -> None:
    """With tracing on the call runs the function's body compiled at its lines in the module
    (``_api.binding.slow``): the traceback shows them, and the trace has the call."""
    proc = run_python(TRACED, env={"OFFLOAD_TRACE": "1"})
    refused, failed = json.loads(proc.stdout.splitlines()[-1])
    ours = [f for f in refused if f[2]]
    assert ours[-1][:2] == ["_body_olMemAlloc", "if size == 0: raise _OffloadError(8, 'validation failure: Size == 0')"], refused
    assert ours[0][:2] == ["olMemAlloc", "if ctx is None: return _slow(olMemAlloc, (device, alloc_type, size, context,))"], refused
    assert ["_body_olMemFree", "return _impl_olMemFree(ctx, address, context)", True] in failed, failed
    assert "olMemAlloc" in proc.stderr and "olMemFree" in proc.stderr  # traced


def test_without_tracing_the_functions_are_compiled_from_the_same_generator(host: ol.Device) -> None:
    untraced = functions.generate(trace=False)
    assert set(untraced) == {fn.name for fn in table.FUNCTIONS}
    alloc = untraced["olMemAlloc"]
    assert alloc is not generated.olMemAlloc and alloc.__code__.co_filename == "<offload entry point olMemAlloc>"
    assert alloc.__module__ == "offload" and alloc.__doc__ == generated.olMemAlloc.__doc__
    address = alloc(host, ol.AllocType.HOST, 64)
    ol.olMemFree(address)
