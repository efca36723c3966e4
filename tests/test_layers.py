"""The core's layers as packages (core/DESIGN.md "Layers"): the import contracts that say which
layer may import which hold (import-linter), the old public module names of what backend authors
import still work, as the very modules they moved to, with a DeprecationWarning, the contract
(hookspecs) says what the core does with host-to-host copies, the flat handle types are named
``*Handle`` (the old names warn), and ``import offload`` loads the object layer only when used."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import offload as ol

MOVED = {
    "offload.backend_support": "offload.backend.support",
    "offload.native_support": "offload.backend.native",
    "offload.build_support": "offload.backend.build",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_public_module_name_is_the_moved_module_and_warns(old: str) -> None:
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"new = importlib.import_module({MOVED[old]!r})\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"print(importlib.import_module({old!r}) is new)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [f"warned: {old} moved to {MOVED[old]}", "True"], run.stdout


ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "core" / "src", *sorted(ROOT.glob("backends/*/src")), ROOT / "testing" / "src", ROOT / "capi" / "src"]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(sources: list[Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, sources))}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold() -> None:
    """pyproject.toml's [tool.importlinter] contracts, on the source trees of the core, every
    backend, the kit and the C ABI (TYPE_CHECKING imports counted; none ignored)."""
    run = _lint(SOURCES)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout, run.stdout[-3000:]
    assert "ignore_imports" not in (ROOT / "pyproject.toml").read_text()


def test_an_upward_type_import_breaks_the_layers(tmp_path: Path) -> None:
    """The contracts see a layer reaching up even for a type only (an ``if TYPE_CHECKING`` import)."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "core" / "src" / "offload", copy / "offload", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    handles = copy / "offload" / "_core" / "handles.py"
    text = handles.read_text()
    assert "if TYPE_CHECKING:\n" in text
    handles.write_text(text.replace("if TYPE_CHECKING:\n", "if TYPE_CHECKING:\n    from ..objects import Buffer  # noqa: F401\n", 1))
    run = _lint([copy, *SOURCES[1:]], "--contract", "core-layers")
    assert run.returncode == 1, run.stdout[-3000:]
    assert "offload._core.handles -> offload.objects" in run.stdout, run.stdout[-3000:]


def test_an_upward_import_in_the_object_layer_breaks_its_layers(tmp_path: Path) -> None:
    """The object layer's own order: a helper at its bottom reaching up to a class, even for a type only."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "core" / "src" / "offload", copy / "offload", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    rect = copy / "offload" / "objects" / "_rect.py"
    rect.write_text(rect.read_text() + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ._queue import Queue  # noqa: F401\n")
    run = _lint([copy, *SOURCES[1:]], "--contract", "objects-layers")
    assert run.returncode == 1, run.stdout[-3000:]
    assert "offload.objects._rect -> offload.objects._queue" in run.stdout, run.stdout[-3000:]


def test_the_contract_says_where_host_to_host_copies_go(host: ol.DeviceHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    """hookspecs: a synchronous host-to-host copy below 4 MiB is the core's memmove, from 4 MiB the
    host device's data_submit (both host memory), a queued one an enqueue_host_call of its queue."""
    import offload.hookspecs

    assert "from 4 MiB it goes to the destination host device's" in " ".join((offload.hookspecs.__doc__ or "").split())
    backend = host.backend
    seen: list[tuple[str, int]] = []

    def spy(name: str) -> Any:
        real = getattr(backend, name)

        def hook(*args: Any) -> Any:
            seen.append((name, args[3] if name == "data_submit" else 0))
            return real(*args)

        return hook

    monkeypatch.setattr(backend, "data_submit", spy("data_submit"))
    monkeypatch.setattr(backend, "enqueue_host_call", spy("enqueue_host_call"))
    big = 4 << 20
    src, dst = bytearray(b"\x5a" * big), bytearray(big)
    src_address = ctypes.addressof((ctypes.c_char * big).from_buffer(src))
    dst_address = ctypes.addressof((ctypes.c_char * big).from_buffer(dst))
    ol.olMemcpy(None, dst_address, host, src_address, host, big - 1)
    assert seen == [] and dst[: big - 1] == src[: big - 1]
    ol.olMemcpy(None, dst_address, host, src_address, host, big)
    assert seen == [("data_submit", big)] and dst == src
    queue = ol.olCreateQueue(host)
    try:
        ol.olMemcpy(queue, dst_address, host, src_address, host, 64)
        ol.olSyncQueue(queue)
    finally:
        ol.olDestroyQueue(queue)
    assert seen[1:] == [("enqueue_host_call", 0)]


def _child_lines(code: str) -> list[str]:
    """The lines ``code`` prints in a fresh interpreter (which must succeed)."""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_the_flat_handle_types_are_named_handles_and_the_old_names_warn() -> None:
    code = (
        "import sys, warnings\n"
        "import offload\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        "names = ('Platform', 'Device', 'Context', 'Queue', 'Event', 'Program', 'Symbol')\n"
        "print(all(getattr(offload, n + 'Handle').__name__ == n + 'Handle' for n in names))\n"
        "for n in names:\n"
        "    try:\n"
        "        getattr(offload, n)\n"
        "    except DeprecationWarning as w:\n"
        "        print(str(w).split(',')[0])\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "print(offload.Queue is offload.QueueHandle, 'Device' in offload.__all__, 'DeviceHandle' in offload.__all__)\n"
    )
    lines = _child_lines(code)
    assert lines[0] == "True"
    assert lines[1:8] == [f"offload.{n} is offload.{n}Handle" for n in ("Platform", "Device", "Context", "Queue", "Event", "Program", "Symbol")]
    assert lines[8] == "True False True"


def test_import_offload_leaves_the_object_layer_until_it_is_used() -> None:
    code = (
        "import sys\n"
        "import offload\n"
        "offload.olInit(); offload.olShutDown()\n"
        "print('offload.objects' in sys.modules)\n"
        "print(offload.Buffer.__module__, 'offload.objects' in sys.modules, offload.objects.Buffer is offload.Buffer)\n"
    )
    assert _child_lines(code) == ["False", "offload.objects True True"]
