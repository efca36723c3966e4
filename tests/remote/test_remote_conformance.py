"""offload-remote (backends/remote): the whole conformance kit on a device in another process, on
both of the core's paths, and its size (the example of a remote device fits in 300 lines).

Each kit run is a child pytest process over kit_remote.py with OFFLOAD_TEST_PLATFORM=remote and
OFFLOAD_BACKENDS=remote,host (the host backend gives the host memory results are copied to) and
OFFLOAD_REMOTE=local (start the local server)."""

from __future__ import annotations

import ast
import io
import os
import tokenize
from pathlib import Path

import pytest

from helpers import DEVICE_OF, run_pytest

pytest.importorskip("offload_remote")

KIT = Path(__file__).with_name("kit_remote.py")
SOURCE = Path(__file__).resolve().parents[2] / "backends" / "remote" / "src" / "offload_remote"
#: What a remote device may skip: the features its server's host backend lacks (registration,
#: occupancy), the memory the host cannot reach (MANAGED, HOST), pointers stored in device memory
#: (dtor_out), and the absence checks of the features it has.
ALLOWED_SKIPS = (
    "(the feature is tested, not its absence)",
    "capabilities.mem_register is False",
    "capabilities.occupancy is False",
    "capabilities.managed_memory is False",
    "capabilities.host_memory is False",
    "capabilities.dtor_out is False",
)


@pytest.mark.parametrize("compiled", ["1", "0"])
def test_kit_on_remote(compiled: str, show) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env.update(OFFLOAD_COMPILED=compiled, OFFLOAD_TEST_PLATFORM="remote", OFFLOAD_BACKENDS="remote,host", OFFLOAD_REMOTE="local")
    proc, summary, counts = run_pytest(["-rs", str(KIT)], env, KIT.parent)
    assert proc.returncode == 0, f"the kit failed on remote:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    show(f"kit on remote (OFFLOAD_COMPILED={compiled}): {counts}")
    assert counts.get("passed", 0) > 400 and counts.get("failed", 0) == 0, summary
    unexpected = [line for line in skips if not any(allowed in line for allowed in ALLOWED_SKIPS)]
    assert not unexpected, unexpected


def _code_lines(path: Path) -> int:
    """Lines of code: not blank, not only a comment, not part of a docstring."""
    text = path.read_text()
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                docs.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines = {n for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skip for n in range(t.start[0], t.end[0] + 1)}
    return len(lines - docs)


def test_remote_backend_fits_in_300_lines(show) -> None:
    counts = {path.name: _code_lines(path) for path in sorted(SOURCE.glob("*.py"))}
    show(f"offload-remote lines of code: {counts} = {sum(counts.values())}")
    assert sum(counts.values()) <= 300, counts


LOST = r"""
import json, os
os.environ.update(OFFLOAD_REMOTE="local", OFFLOAD_BACKENDS="remote,host")
import offload as ol
from offload._core.session import STATE
""" + DEVICE_OF + r"""
ol.olInit()
dev = device_of("remote")
queue = ol.olCreateQueue(dev)
kept = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
server = dev.platform.backend.plugin.process
server.kill()
server.wait()
result = {}
for name, call in (("alloc", lambda: ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)), ("shutdown", ol.olShutDown)):
    try:
        call()
        result[name] = "SUCCESS"
    except ol.OffloadError as exc:
        result[name] = exc.code.name
        result[name + "_details"] = exc.details
result["idle"] = STATE.ctx is None
print(json.dumps(result))
"""


def test_a_dead_server_is_a_lost_device(run_python) -> None:
    """The server killed: requests fail BACKEND_FAILURE (never hang) and the final olShutDown
    reports it and ends the session."""
    import json

    proc = run_python(LOST)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["alloc"] == "BACKEND_FAILURE" and "lost" in result["alloc_details"], result
    assert result["shutdown"] == "BACKEND_FAILURE" and result["idle"] is True, result
