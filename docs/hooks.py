"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

- ``on_pre_build``: records a real timeline (``OFFLOAD_TRACE=perfetto``) of a small job on the
  host device and draws it with ``offload trace plot`` into ``docs/generated/timeline.png``, the
  picture on the tracing page;
- ``on_page_markdown``: replaces ``<!-- offload:flat-api -->`` with the reference of every ``ol*``
  function, generated from the API table (``offload._api.table``) and the functions' docstrings.

What the build needs and cannot find (offload, its host backend, numpy, matplotlib) or a job that
fails ends the build with a ``PluginError`` naming it, and the fix: ``pip install -r
docs/requirements.txt`` from the repository root.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
from typing import Any

from mkdocs.exceptions import PluginError

DOCS = pathlib.Path(__file__).resolve().parent
GENERATED = DOCS / "generated"
MARKER = "<!-- offload:flat-api -->"
INSTALL = "run `pip install -r docs/requirements.txt` from the repository root (it installs offload from this checkout)"
# what the build imports, and the distribution that brings each
NEEDED = {"offload": "offload-core", "offload_host": "offload-host", "numpy": "numpy", "matplotlib": "matplotlib (offload's plot extra)"}

JOB = r"""
import numpy as np, offload
source = open(__SAXPY__).read()
device = offload.devices("host")[0]
n = 1 << 20
x = offload.to_device(np.arange(n, dtype=np.float32), device)
y = offload.empty(n, "float32", device)
program = device.build_program(source)
saxpy = program.kernel("saxpy")
with device.queue() as first, device.queue() as second:
    for step in range(4):
        queue = first if step % 2 == 0 else second
        y.buffer.fill(b"\0\0\x80\x3f", queue=queue)
        queue.launch(saxpy, n // 256, 256, 2.0, x, y, n)
        queue.host_function(lambda: None)
    done = first.record()
    second.wait(done)
print(float(y.to_numpy()[3]))
""".replace("__SAXPY__", repr(str(DOCS.parent / "examples" / "kernels" / "saxpy_portable.c")))


def missing() -> list[str]:
    """The distributions the build needs that this Python cannot import."""
    return [dist for module, dist in NEEDED.items() if importlib.util.find_spec(module) is None]


def on_pre_build(config: Any) -> None:
    absent = missing()
    if absent:
        raise PluginError(f"the documentation build needs {', '.join(absent)}, not installed for {sys.executable}: {INSTALL}")
    GENERATED.mkdir(exist_ok=True)
    trace = GENERATED / "timeline.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env["OFFLOAD_TRACE"] = f"perfetto:{trace}"
    proc = subprocess.run([sys.executable, "-c", JOB], env=env, timeout=300, capture_output=True, text=True)
    if proc.returncode != 0:
        said = "\n".join(proc.stderr.strip().splitlines()[-15:]) or "(nothing on stderr)"
        raise PluginError(
            f"the job recording the timeline picture (docs/hooks.py JOB, on the host device; it compiles "
            f"a kernel with the C compiler) failed with exit status {proc.returncode}:\n{said}"
        )
    from offload.cli import main

    status = main(["trace", "plot", str(trace), "-o", str(GENERATED / "timeline.png"), "--title",
                   "saxpy on two host queues: fills, launches, host functions, an event wait"])  # fmt: skip
    if status != 0:
        raise PluginError(f"offload trace plot failed with exit status {status} (its message is above)")


def _signature(function: Any) -> str:
    params = []
    for p in function.params:
        params.append(f"{p.py}=None" if p.optional else p.py)
    return f"{function.name}({', '.join(params)})"


def flat_api_reference() -> str:
    import offload
    from offload._api.table import FUNCTIONS

    lines = ["| function | C parameters | returns |", "|---|---|---|"]
    for f in FUNCTIONS:
        c_params = ", ".join(f"`{p.c}`" for p in f.params) or "none"
        returns = f"`{f.out.c}`" if f.out is not None else "None"
        lines.append(f"| [`{f.name}`](#{f.name.lower()}) | {c_params} | {returns} |")
    lines.append("")
    for f in FUNCTIONS:
        doc = (getattr(offload, f.name).__doc__ or f.doc).strip()
        lines += [f"### {f.name}", "", "```python", _signature(f), "```", "", doc, ""]
        kinds = ", ".join(f"`{p.py}` ({p.kind}{', optional' if p.optional else ''})" for p in f.params)
        if kinds:
            lines += [f"Parameters: {kinds}.", ""]
        if f.checks:
            lines += ["Validation, in liboffload's order:", ""]
            lines += [f"- `{c.c_text}`: `{c.code.name}`" for c in f.checks]
            lines.append("")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, flat_api_reference())
    return markdown
