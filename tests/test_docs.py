"""The documentation site builds with warnings as errors (``mkdocs build --strict``): every page,
the flat API reference generated from the API table, the object layer from the docstrings, and the
timeline picture that the build records and draws itself. A strict build still passes when a
page's text is swallowed (a line starting with an HTML tag folds the rest of the page into a raw
block) or an API reference renders nothing, so every page is also read back: each heading of its
source is a rendered heading, its last paragraph is rendered text, and each ``:::`` reference
gave API entries with documentation. The site is built once for the module, or read from
``OFFLOAD_TEST_DOCS_SITE`` (the folder scripts/test.sh has just built). Skipped, with the reason,
where mkdocs (docs/requirements.txt, which scripts/test.sh installs) is not installed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import child_environ

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
TEXT_ELEMENTS = {"p", "li", "td", "th", "dt", "dd", "pre", "h1", "h2", "h3", "h4", "h5", "h6"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python", "matplotlib"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -r docs/requirements.txt)")
    built = os.environ.get("OFFLOAD_TEST_DOCS_SITE")
    if built:
        assert (Path(built) / "index.html").is_file(), f"OFFLOAD_TEST_DOCS_SITE={built} holds no built site"
        return Path(built)
    out = tmp_path_factory.mktemp("docs") / "site"
    env = child_environ("OFFLOAD_")
    env["NO_MKDOCS_2_WARNING"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_site_builds_strictly(site: Path) -> None:
    from offload._api.table import FUNCTIONS

    flat = (site / "flat-api" / "index.html").read_text()
    assert all(f'id="{f.name.lower()}"' in flat for f in FUNCTIONS), "a function is missing from the reference"
    assert (site / "generated" / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    assert 'src="../generated/timeline.png"' in (site / "tracing" / "index.html").read_text()
    objects = (site / "objects" / "index.html").read_text()
    assert "offload.objects.Array" in objects and "copy_from" in objects


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", text)


class Page(HTMLParser):
    """A rendered page's article: its headings, the words of its text elements (paragraphs, list
    items, table cells, code blocks; not raw text a swallowed block left bare), and per API entry
    (a mkdocstrings ``doc-heading``) the text of its documentation."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[list[str]] = []
        self.words: list[str] = []
        self.entries: dict[str, str] = {}
        self.anchors: set[str] = set()
        self._article = 0
        self._text = 0
        self._heading: list[str] | None = None
        self._entry = ""
        self._contents = 0
        self._stack: list[tuple[str, bool, bool, bool]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        ident = found.get("id")
        if ident:
            self.anchors.add(ident)
        if tag in VOID:
            return
        article = tag == "article" or bool(self._article)
        text = article and tag in TEXT_ELEMENTS
        contents = article and "doc-contents" in classes
        self._stack.append((tag, tag == "article", text, contents))
        self._article += tag == "article"
        self._text += text
        self._contents += contents
        if article and tag in HEADINGS:
            self._heading = []
            if "doc-heading" in classes and ident:
                self._entry = ident
                self.entries.setdefault(ident, "")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if all(name != tag for name, *_ in self._stack):
            return  # a stray end tag closes nothing
        while self._stack:
            name, article, text, contents = self._stack.pop()
            self._article -= article
            self._text -= text
            self._contents -= contents
            if name in HEADINGS and self._heading is not None:
                self.headings.append(self._heading)
                self._heading = None
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        if not self._article:
            return
        words = _words(data)
        if self._heading is not None:
            self._heading += words
        if self._text:
            self.words += words
        if self._contents and self._entry:
            self.entries[self._entry] += data


def _source(page: str) -> tuple[list[list[str]], list[str], list[str]]:
    """A page's markdown: its headings' words, the words of its last prose block (code fences,
    ``:::`` references with their options and HTML comments aside), and its ``:::`` identifiers."""
    headings: list[list[str]] = []
    blocks: list[list[str]] = [[]]
    references: list[str] = []
    fence = in_reference = False
    for line in (DOCS / page).read_text().splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        if line.startswith("::: "):
            references.append(line[4:].strip())
            in_reference = True
            continue
        if in_reference and (line.startswith(" ") or not line.strip()):
            continue
        in_reference = False
        if not line.strip() or line.lstrip().startswith("<!--"):
            blocks.append([])
            continue
        if re.match(r"#{1,6} ", line):
            headings.append(_words(line.lstrip("#")))
        text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", line)  # an image: no text
        blocks[-1] += _words(re.sub(r"\]\([^)]*\)", "]", text))  # a link: its text, not its target
    last = [block for block in blocks if block]
    return headings, (last[-1] if last else []), references


def _html(site: Path, page: str) -> str:
    name = page.removesuffix(".md")
    return (site / ("index.html" if name == "index" else f"{name}/index.html")).read_text()


def _contains(words: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(words[i : i + n] == part for i in range(len(words) - n + 1))


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_to_its_end(site: Path, page: str) -> None:
    rendered = Page(_html(site, page))
    headings, last, _ = _source(page)
    assert headings and last, f"{page}: no heading or no prose found in the source"
    at = 0
    for heading in headings:  # in order, each a rendered heading (generated ones may come between)
        while at < len(rendered.headings) and rendered.headings[at][: len(heading)] != heading:
            at += 1
        assert at < len(rendered.headings), f"{page}: the heading {' '.join(heading)!r} was not rendered (or out of order)"
        at += 1
    tail = last[-15:]
    assert _contains(rendered.words, tail), f"{page}: its last paragraph ({' '.join(tail)!r}) is not rendered text"


@pytest.mark.parametrize("page", [p for p in PAGES if _source(p)[2]])
def test_every_api_reference_renders_entries(site: Path, page: str) -> None:
    html = _html(site, page)
    rendered = Page(html)
    for identifier in _source(page)[2]:
        assert identifier in rendered.anchors, f"{page}: '::: {identifier}' rendered no anchor"
        entries = {k: v for k, v in rendered.entries.items() if k == identifier or k.startswith(identifier + ".")}
        assert any(text.strip() for text in entries.values()), f"{page}: '::: {identifier}' rendered no documented API entry"
    assert "::: " not in " ".join(rendered.words) and not re.search(r"^::: ", html, re.M), f"{page}: a raw ':::' line"


def _hooks() -> Any:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -r docs/requirements.txt)")
    spec = importlib.util.spec_from_file_location("offload_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_missing_package_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = _hooks()
    from mkdocs.exceptions import PluginError

    assert "offload-core" not in hooks.missing()  # offload runs these tests
    monkeypatch.setitem(hooks.NEEDED, "offload_no_such_module", "offload-no-such")
    with pytest.raises(PluginError) as caught:
        hooks.on_pre_build(None)
    message = str(caught.value)
    assert "offload-no-such" in message and "offload-core" not in message and "pip install -r docs/requirements.txt" in message


def test_a_failing_timeline_job_shows_its_own_error(tmp_path: Path) -> None:
    """The job compiles a kernel: with a compiler that fails (and an empty program cache) the build
    ends with the compiler's error, not a CalledProcessError that hides it."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -r docs/requirements.txt)")
    env = {**child_environ("OFFLOAD_"), "NO_MKDOCS_2_WARNING": "1", "CC": "/bin/false", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "the job recording the timeline picture" in output and "COMPILE_FAILURE" in output, output
    assert "CalledProcessError" not in output
