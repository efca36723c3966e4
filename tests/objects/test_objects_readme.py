"""The README's object-layer example runs as written."""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_object_layer_example_runs(capsys: object) -> None:
    text = README.read_text()
    section = text[text.index("## The object layer") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(compile(code[1], "README.md", "exec"), namespace)
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "[1. 3. 5. 7.]" in out and "ms" in out


def test_first_example_runs(capsys: object, monkeypatch: object) -> None:
    """The README's first example (offload.build for the default device: the host, named here,
    since a simulated GPU runs only the builds its test registers)."""
    monkeypatch.setenv("OFFLOAD_DEVICE", "host")  # type: ignore[attr-defined]
    text = README.read_text()
    section = text[text.index("## A first example") : text.index("## The two commands")]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code[1], "README.md", "exec"), {})
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out.strip() == "[1. 3. 5. 7.]"
