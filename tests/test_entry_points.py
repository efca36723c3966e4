"""``offload._core.installed``: the same entry points, in the same order, as ``importlib.metadata``
(on the installed environment and on made-up layouts), and its hand-over for what it does not model."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from offload._core import installed as _entry_points
from offload._core.installed import EntryPointRecord, entry_points


def metadata_view(group: str) -> list[EntryPointRecord]:
    return [
        EntryPointRecord(ep.name, ep.value, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)
        for ep in importlib.metadata.entry_points(group=group)
    ]


@pytest.mark.parametrize("group", ["offload.backends", "offload.conformance", "console_scripts", "pytest11"])
def test_the_installed_environment_reads_as_importlib_metadata_reads_it(group: str) -> None:
    assert _entry_points._scan(group) is not None, "this environment's layout should be read directly"
    assert entry_points(group) == metadata_view(group)


def test_the_installed_backends_are_found() -> None:
    names = {ep.name: ep for ep in entry_points("offload.backends")}
    assert "host" in names and names["host"].dist_name == "offload-host"
    assert hasattr(names["host"].load(), "__call__")


def dist(root: Path, dirname: str, entry_points_txt: str | None, metadata: str | None = None, meta_file: str = "METADATA") -> None:
    d = root / dirname
    d.mkdir(parents=True)
    if entry_points_txt is not None:
        (d / "entry_points.txt").write_text(textwrap.dedent(entry_points_txt))
    if metadata is not None:
        (d / meta_file).write_text(textwrap.dedent(metadata))


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    dist(first, "alpha_pkg-1.0.dist-info", """
        # a comment
        [demo.group]
        one = alpha.mod:factory
          two=alpha.mod:Outer.inner   [extra]

        [other]
        skip = nope:nothing
        """, "Metadata-Version: 2.1\nName: Alpha.Pkg\nVersion: 1.0\nSummary: x\n\nName: not-this\n")
    dist(first, "beta-2.0.egg-info", "[demo.group]\nthree = beta\n", "Metadata-Version: 1.1\nName: beta\nVersion: 2.0\n", "PKG-INFO")
    dist(first, "gamma-0.1.dist-info", "[demo.group]\nfour = gamma:make\n")  # no METADATA
    dist(first, "delta-3.dist-info", None, "Name: delta\nVersion: 3\n")  # no entry points
    dist(second, "alpha.pkg-9.9.dist-info", "[demo.group]\nshadowed = alpha.other:factory\n", "Name: alpha-pkg\nVersion: 9.9\n")
    dist(second, "epsilon-1.dist-info", "[demo.group]\none = epsilon:again\n", "Name: epsilon\nVersion: 1\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second)])
    return first, second


def test_a_made_up_layout_reads_as_importlib_metadata_reads_it(layout: tuple[Path, Path]) -> None:
    found = entry_points("demo.group")
    assert found == metadata_view("demo.group")
    assert sorted((e.name, e.value, e.dist_name, e.dist_version) for e in found) == [
        ("four", "gamma:make", None, None),
        ("one", "alpha.mod:factory", "Alpha.Pkg", "1.0"),
        ("one", "epsilon:again", "epsilon", "1"),
        ("three", "beta", "beta", "2.0"),
        ("two", "alpha.mod:Outer.inner   [extra]", "Alpha.Pkg", "1.0"),
    ]
    assert all(e.value != "alpha.other:factory" for e in found), "the first distribution of a name wins"
    assert entry_points("other") == [EntryPointRecord("skip", "nope:nothing", "Alpha.Pkg", "1.0")]
    assert entry_points("no.such.group") == []


def test_a_zip_on_the_path_is_left_to_importlib_metadata(layout: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zeta-1.dist-info/METADATA", "Name: zeta\nVersion: 1\n")
        z.writestr("zeta-1.dist-info/entry_points.txt", "[demo.group]\nsix = zeta:make\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(archive)])
    assert _entry_points._scan("demo.group") is None
    found = entry_points("demo.group")
    assert found == metadata_view("demo.group") and found[-1].name == "six"


def test_a_meta_path_finder_with_distributions_is_left_to_importlib_metadata(layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        @staticmethod
        def find_spec(*args: object) -> None:
            return None

        @staticmethod
        def find_distributions(*args: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert _entry_points._scan("demo.group") is None
    assert entry_points("demo.group") == metadata_view("demo.group")


def test_load_resolves_dotted_attributes_and_names_a_bad_value() -> None:
    assert EntryPointRecord("x", "os.path:join", None, None).load() is __import__("os").path.join
    assert EntryPointRecord("x", "collections : OrderedDict.fromkeys [extra]", None, None).load().__name__ == "fromkeys"
    assert EntryPointRecord("x", "json", None, None).load().__name__ == "json"
    with pytest.raises(ValueError, match="'x': 'not a value!' is not 'module:attribute'"):
        EntryPointRecord("x", "not a value!", None, None).load()
