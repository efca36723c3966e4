"""``offload trace plot FILE -o PNG``: a timeline recorded here drawn as a picture; the rows it
draws (API threads, then each device's queues); bad input and a missing matplotlib."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offload.cli import main
from offload.cli._trace_plot import tracks
from helpers import child_environ

JOB = """
import numpy as np, offload
device = offload.devices("host")[0]
x = offload.to_device(np.arange(1 << 16, dtype=np.float32), device)
y = offload.empty(1 << 16, "float32", device)
with device.queue() as queue:
    for _ in range(3):
        y.copy_from(x, queue=queue)
        y.buffer.fill(b"\\0\\0\\0\\0", queue=queue)
"""


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plot") / "job.json"
    env = child_environ("OFFLOAD_")
    env["OFFLOAD_TRACE"] = f"perfetto:{path}"
    proc = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and path.exists(), proc.stderr
    return path


def test_rows_are_api_threads_then_device_queues(trace: Path) -> None:
    rows, end = tracks(json.loads(trace.read_text())["traceEvents"])
    labels = [label for label, _ in rows]
    assert labels[0].startswith("offload API") and "MainThread" in labels[0]
    assert any("device host:0" in label and "queue #1" in label for label in labels), labels
    categories = {span[2] for _, spans in rows for span in spans}
    assert {"api", "memcpy", "fill"} <= categories
    assert end > 0 and all(start >= 0 and start + duration <= end + 1e-9 for _, s in rows for start, duration, _, _ in s)


def test_plot_writes_a_png(trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "job.png"
    assert main(["trace", "plot", str(trace), "-o", str(out), "--title", "a job"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    assert "spans on" in capsys.readouterr().out


def test_not_a_trace_is_exit_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": "events"}')
    assert main(["trace", "plot", str(bad), "-o", str(tmp_path / "x.png")]) == 2
    assert "not a trace-event file" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    assert main(["trace", "plot", str(empty), "-o", str(tmp_path / "x.png")]) == 2
    assert main(["trace", "plot", str(empty)]) == 2  # -o is required


def test_without_matplotlib_it_says_so(trace: Path, tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        f"from offload.cli import main; sys.exit(main(['trace', 'plot', {str(trace)!r}, '-o', {str(tmp_path / 'x.png')!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "needs matplotlib" in proc.stderr, proc.stderr
    assert "pip install 'offload[plot]'" in proc.stderr  # the extra that installs it


def test_the_plot_extra_brings_matplotlib() -> None:
    """What the message names exists: offload-core's ``plot`` extra requires matplotlib, and the
    root distribution ``offload`` (where installed) passes its ``plot`` extra on to offload-core's."""
    from importlib import metadata

    core = [r for r in metadata.requires("offload-core") or [] if 'extra == "plot"' in r]
    assert any(r.startswith("matplotlib") for r in core), core
    try:
        root = [r for r in metadata.requires("offload") or [] if 'extra == "plot"' in r]
    except metadata.PackageNotFoundError:
        print("\nthe root distribution offload is not installed here: its plot extra is not checked")
        return
    assert any(r.replace(" ", "").startswith("offload-core[plot]") for r in root), root
