"""The compiled path (offload._compiled._fastpath, core/DESIGN.md "The compiled path"): which path runs,
and that every case off its common path gives the same result, error code and message as the
pure-Python path (``OFFLOAD_COMPILED=0``), which it defers them to.

Run in child processes: the switch is read once, at import."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import offload as ol
from offload._core import native as _native_entry

CASES = Path(__file__).resolve().parent / "compiled_cases.py"
needs_compiled = pytest.mark.skipif(
    not _native_entry.ENABLED, reason="the compiled path is off here (OFFLOAD_COMPILED=0, or offload._compiled._fastpath not built)"
)


Counts = dict[str, dict[str, int] | None]


def _run_both(compiled: str, extra: dict[str, str] | None = None) -> tuple[list[str], Counts, Counts]:
    """The case lines, the object layer's compiled copies' counts and the compiled functions' counts."""
    env = {**os.environ, "OFFLOAD_COMPILED": compiled, "OFFLOAD_BACKENDS": "host", **(extra or {})}
    run = subprocess.run([sys.executable, str(CASES)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [re.sub(r"0x[0-9a-f]+", "0x?", line) for line in run.stdout.splitlines()]  # addresses differ per run
    assert lines[-1].startswith("COUNTS ") and lines[-2].startswith("COPIES "), run.stdout
    return lines[:-2], json.loads(lines[-2][len("COPIES "):]), json.loads(lines[-1][len("COUNTS "):])


def _run(compiled: str, extra: dict[str, str] | None = None) -> tuple[list[str], Counts]:
    lines, _, counts = _run_both(compiled, extra)
    return lines, counts


@needs_compiled
def test_every_deferred_case_raises_the_same_error_both_ways() -> None:
    compiled, counts = _run("1")
    python, no_counts = _run("0")
    assert compiled == python
    assert all(value is None for value in no_counts.values())  # OFFLOAD_COMPILED=0: the Python functions
    assert any(": INVALID_" in line for line in compiled) and any(": ok" in line for line in compiled)
    for name, value in counts.items():  # each compiled function ran in C and deferred at least once
        assert value is not None and value["fast"] > 0 and value["deferred"] > 0, (name, value)
    # the host device's native entry points took the declared kernel's launches and the queries
    assert counts["olLaunchKernel"]["native"] > 0 and counts["olQueryQueue"]["native"] > 0  # type: ignore[index]
    by_name = dict(line.split(": ", 1) for line in compiled)
    assert by_name["sync event hook raises ValueError"].startswith("INVALID_ARGUMENT: olSyncEvent: ValueError: ")
    assert by_name["launch too much local memory"].startswith("OUT_OF_RESOURCES: DynSharedMemory")


@needs_compiled
def test_the_object_layer_copies_the_same_both_ways() -> None:
    """Buffer.copy_from/copy_to, Array.copy_from, Queue.copy: the C methods replay the verdicts the
    Python decision published and hand the rest to the Python methods, which give each error
    (objects/_records.py)."""
    compiled, copies, _ = _run_both("1")
    python, no_copies, _ = _run_both("0")
    assert [line for line in compiled if line.startswith("objects ")] == [line for line in python if line.startswith("objects ")]
    assert all(value is None for value in no_copies.values())  # OFFLOAD_COMPILED=0: the Python methods
    for name, value in copies.items():  # each copied in C and deferred at least once
        assert value is not None and value["fast"] > 0 and value["deferred"] > 0, (name, value)
    by_name = dict(line.split(": ", 1) for line in compiled)
    assert by_name["objects copy ok"] == "ok (b'01abcdefghABCDEF', b'wxyz')"
    assert by_name["objects copy overrun"].startswith("INVALID_SIZE: copying 8 bytes to offset 9 overruns")
    assert by_name["objects copy into read-only memory"].endswith("is read-only memory")
    assert by_name["objects copy from another session"].startswith("INVALID_ARGUMENT: ") and "ended" in by_name[
        "objects copy from another session"]
    assert by_name["objects copy an int"] == "INVALID_ARGUMENT: src must support the buffer protocol, got int"


@needs_compiled
def test_tracing_on_defers_every_call_to_the_traced_python_function() -> None:
    lines, counts = _run("1", {"OFFLOAD_TRACE": "1"})
    assert lines == _run("0", {"OFFLOAD_TRACE": "1"})[0]
    for name, value in counts.items():
        assert value is not None and value["fast"] == 0, (name, value)


@needs_compiled
def test_the_compiled_functions_keep_the_generated_ones_as_fallback() -> None:
    launch = ol.olLaunchKernel
    assert type(launch).__module__ == "offload._compiled._fastpath" and launch.__name__ == "olLaunchKernel"
    assert launch.__doc__ == launch.fallback.__doc__ and launch.__wrapped__ is launch.fallback
    assert set(launch.counts) == {"fast", "deferred", "native"}
    assert pickle.loads(pickle.dumps(launch)) is launch  # by name, as the Python function was
    before = launch.counts
    with pytest.raises(ol.OffloadError) as raised:
        launch(None, None, None, None, None)  # uninitialised or NULL: deferred
    assert raised.value.code in (ol.ErrorCode.UNINITIALIZED, ol.ErrorCode.INVALID_NULL_HANDLE)
    assert launch.counts["deferred"] == before["deferred"] + 1


def test_the_switch_selects_the_python_functions() -> None:
    code = "import offload, offload._core.native as n; print(n.ENABLED, type(offload.olMemcpy).__name__)"
    off = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OFFLOAD_COMPILED": "0"},
                         capture_output=True, text=True, timeout=120)
    assert off.stdout.split() == ["False", "function"], off.stdout + off.stderr
    on = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OFFLOAD_COMPILED": "1"},
                        capture_output=True, text=True, timeout=120)
    built = _native_entry._fastpath is not None
    assert on.stdout.split() == (["True", "Entry"] if built else ["False", "function"]), on.stdout + on.stderr
