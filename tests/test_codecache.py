"""The entry points' code cache (``offload._api.codecache``): a hit only for exactly the same sources,
every unreadable file a miss, atomic writes, ``sys.dont_write_bytecode`` obeyed, and the build's
precompiled cache matching the installed generator."""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path

import pytest

import offload
from offload._api import table as _api_table, codecache as _codecache, codegen as _codegen, functions as _entrypoints

SOURCES = {
    "one": ("def one():\n    return 1\n", "<offload entry point one>"),
    "two": ("def two(x):\n    return x * 2\n", "<offload entry point two>"),
}


def run(codes: dict, name: str, *args: object) -> object:
    namespace: dict = {}
    exec(codes[name], namespace)
    return namespace[name](*args)


@pytest.fixture
def writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(sources: object) -> None:
        raise AssertionError("compiled although the cache holds these sources")

    monkeypatch.setattr(_codecache, "_compile", refuse)


def test_a_second_call_reads_what_the_first_wrote(tmp_path: Path, writes_bytecode: None, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "sub" / "cache.marshal"
    first = _codecache.code_objects(SOURCES, str(cache))
    assert cache.is_file() and run(first, "two", 21) == 42
    assert [p.name for p in cache.parent.iterdir()] == ["cache.marshal"]  # no temporary file left
    no_compiling(monkeypatch)
    again = _codecache.code_objects(SOURCES, str(cache))
    assert run(again, "one") == 1 and run(again, "two", 4) == 8
    assert again["two"].co_filename == "<offload entry point two>"


def test_changed_sources_are_compiled_afresh_and_replace_the_file(tmp_path: Path, writes_bytecode: None) -> None:
    cache = str(tmp_path / "cache.marshal")
    _codecache.code_objects(SOURCES, cache)
    edited = dict(SOURCES, two=("def two(x):\n    return x * 3\n", "<offload entry point two>"))
    assert run(_codecache.code_objects(edited, cache), "two", 2) == 6
    assert _codecache._read(cache, SOURCES) is None and _codecache._read(cache, edited) is not None
    renamed = dict(edited, two=(edited["two"][0], "<elsewhere>"))
    assert _codecache._read(cache, renamed) is None  # the filename is part of what must match
    fewer = {"one": SOURCES["one"]}
    assert _codecache._read(cache, fewer) is None


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal data",
        marshal.dumps((1, {"one": ("def one():\n    return 1\n", "<offload entry point one>")}))[:-3],
        marshal.dumps(["a list"]),
        marshal.dumps((99, {})),
        marshal.dumps((1, {"one": ("def one():\n    return 1\n", 5), "two": ("x", None)})),
        marshal.dumps((1, {"one": "flat", "two": "flat"})),
    ],
    ids=["empty", "garbage", "truncated", "wrong-shape", "other-format", "no-code", "flat-entries"],
)
def test_an_unreadable_cache_is_a_miss_and_is_rewritten(tmp_path: Path, writes_bytecode: None, content: bytes) -> None:
    cache = tmp_path / "cache.marshal"
    cache.write_bytes(content)
    assert run(_codecache.code_objects(SOURCES, str(cache)), "two", 5) == 10
    assert _codecache._read(str(cache), SOURCES) is not None


def test_dont_write_bytecode_is_obeyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = tmp_path / "cache.marshal"
    assert run(_codecache.code_objects(SOURCES, str(cache)), "one") == 1
    assert not cache.exists()
    _codecache.store(str(cache), SOURCES)  # the build writes regardless, as pip writes .pyc files
    assert _codecache._read(str(cache), SOURCES) is not None


def test_an_unwritable_place_costs_nothing_and_store_says_why(tmp_path: Path, writes_bytecode: None) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = str(blocker / "below" / "cache.marshal")
    assert run(_codecache.code_objects(SOURCES, cache), "one") == 1
    with pytest.raises(OSError):
        _codecache.store(cache, SOURCES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_the_installed_package_carries_the_precompiled_entry_points() -> None:
    installed = Path(offload.__file__).resolve()
    if (Path(__file__).resolve().parents[1] / "core" / "src") in installed.parents:
        pytest.skip("offload runs from the source tree (an editable install): the build step did not run")
    assert os.path.isfile(_codecache.DEFAULT_CACHE), "core/setup.py's build_py should have written it"
    assert _codecache._read(_codecache.DEFAULT_CACHE, _codegen.sources()) is not None, "stale precompiled entry points"


def test_the_generated_functions_come_from_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache.marshal")
    _codecache.store(cache, _codegen.sources())
    no_compiling(monkeypatch)
    functions = _entrypoints.generate(cache=cache)
    assert functions["olMemcpy"].__code__.co_filename == "<offload entry point olMemcpy>"
    assert set(functions) == {fn.name for fn in _api_table.FUNCTIONS}
