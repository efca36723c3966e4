"""Types: the generated stub matches the API table (and this test fails when they drift), the
runtime functions have the stub's signatures, mypy --strict passes a script using both layers and
catches the mistakes the flat API used to let through, and help(offload) stays readable."""

from __future__ import annotations

import ast
import inspect
import pathlib
import pydoc
import re
import subprocess
import sys

import pytest

import offload
from offload._api import codegen as _codegen, table as _api_table, stubgen as _stubgen
from offload._values import enums as _enums

ROOT = pathlib.Path(__file__).resolve().parents[2]
API = ROOT / "core" / "src" / "offload" / "_api"
STUB = API / "flat.pyi"
EXAMPLES = ROOT / "examples"


def test_stubs_match_the_table() -> None:
    stubs = _stubgen.generate()
    assert sorted(stubs) == ["flat.pyi", "generated/devices.pyi", "generated/memory.pyi", "generated/queues.pyi"]
    for name, text in stubs.items():
        assert (API / name).read_text() == text, "run: python -m offload._api.stubgen"
    assert _stubgen.main(["--check", str(API)]) == 0


def test_installed_stubs_are_the_same() -> None:
    installed = pathlib.Path(offload.__file__).parent / "_api"
    for name in _stubgen.generate():
        assert (installed / name).read_text() == (API / name).read_text(), name


def test_a_table_change_is_drift(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    changed = tuple(f for f in _api_table.FUNCTIONS if f.name != "olMemFree")
    monkeypatch.setattr(_codegen, "FUNCTIONS", changed)
    assert _stubgen.generate()["generated/memory.pyi"] != (API / "generated" / "memory.pyi").read_text()
    assert _stubgen.main(["--check", str(API)]) == 1
    assert _stubgen.main([str(tmp_path)]) == 0
    assert "def olMemFree(" not in (tmp_path / "generated" / "memory.pyi").read_text()
    assert not re.search(r"\bolMemFree\b", (tmp_path / "flat.pyi").read_text())
    (tmp_path / "generated" / "gone.pyi").write_text("")  # a module the table no longer gives
    assert _stubgen.main(["--check", str(tmp_path)]) == 1
    assert _stubgen.main([str(tmp_path)]) == 0 and not (tmp_path / "generated" / "gone.pyi").exists()


def _stub_functions() -> dict[str, ast.FunctionDef]:
    functions: dict[str, ast.FunctionDef] = {}
    for stub in sorted((API / "generated").glob("*.pyi")):
        tree = ast.parse(stub.read_text())
        functions.update({node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)})
    return functions


def test_runtime_signatures_match_the_stub() -> None:
    stubbed = _stub_functions()
    generated = [f.name for f in _api_table.FUNCTIONS]
    assert sorted(stubbed) == sorted(generated)
    for name in generated:
        runtime = inspect.signature(getattr(offload, name))
        stub_args = stubbed[name].args
        assert [a.arg for a in stub_args.args] == list(runtime.parameters), name
        with_defaults = [p for p in runtime.parameters.values() if p.default is not inspect.Parameter.empty]
        assert len(stub_args.defaults) == len(with_defaults), name


def test_every_constant_is_typed() -> None:
    text = STUB.read_text()
    for name in _enums.c_constants():
        assert f"\n{name}: int\n" in text


def _mypy(*paths: str, cwd: pathlib.Path = ROOT) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is in tests/requirements.txt")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", *paths],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_mypy_strict_passes_the_examples() -> None:
    proc = _mypy(*(str(p) for p in sorted(EXAMPLES.glob("*.py"))))
    assert proc.returncode == 0, proc.stdout + proc.stderr


MISTAKES = '''
import numpy as np
import offload as ol

ol.olInit()
found: list[ol.DeviceHandle] = []
ol.olIterateDevices(lambda device, _: found.append(device))  # None stops the iteration
ol.olMemAloc(found[0], ol.AllocType.DEVICE, 16)  # a typo
count: str = ol.olGetDeviceInfo(found[0], ol.DeviceInfo.NUM_COMPUTE_UNITS)  # an int
ol.olMemcpy(None, 0, found[0], 0, found[0], "16")  # a str size
buffer = ol.Buffer(64)
buffer.copy_from(np.zeros(4), offset="0")
ol.olLaunchKernel(None, found[0], None, b"", ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)))
'''


def test_mypy_catches_what_the_flat_api_let_through(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "mistakes.py"
    script.write_text(MISTAKES)
    proc = _mypy(str(script))
    assert proc.returncode == 1
    for line in (7, 8, 9, 10, 12, 13):
        assert f"mistakes.py:{line}: error" in proc.stdout, proc.stdout


def test_help_is_readable() -> None:
    text = pydoc.render_doc(offload, renderer=pydoc.plaintext)
    for inherited in ("bit_length", "from_bytes", "as_integer_ratio", "conjugate"):
        assert inherited not in text, f"help(offload) lists int's {inherited}"
    assert len(text.splitlines()) < 3400  # 2500 for R1's 37 functions; main's 48 and 4 enums more (issue 17); stream-ordered memory and streams (issue 32)
    for shown in ("class AllocType", "DEVICE = <AllocType.DEVICE: 1>", "olMemAlloc(device, alloc_type, size, context=None)", "class Buffer"):
        assert shown in text


def test_enums_behave_as_before() -> None:
    device = offload.AllocType.DEVICE
    assert device == 1 and device + 1 == 2 and device.bit_length() == 1 and isinstance(device, int)
    assert offload.AllocType(2) is offload.AllocType.MANAGED and offload.AllocType["HOST"] == 0
    assert "DEVICE" in dir(offload.AllocType) and "from_bytes" not in dir(offload.AllocType)
    flags = offload.DeviceFpCapabilityFlag.FMA | offload.DeviceFpCapabilityFlag.DENORM
    assert int(flags) == 96 and offload.DeviceFpCapabilityFlag.FMA in flags
    # R1's members keep their numbers; main's CONTEXT is appended (main numbers it 1: c_constants("main"))
    assert list(offload.QueueInfo) == [offload.QueueInfo.DEVICE, offload.QueueInfo.EMPTY, offload.QueueInfo.CONTEXT]
    assert [int(m) for m in offload.QueueInfo] == [0, 1, 2]
    # the original assertion, at API level r1: R1's members, in R1's order and numbers
    assert _enums.members_at(offload.QueueInfo, "r1") == [offload.QueueInfo.DEVICE, offload.QueueInfo.EMPTY]
    assert [_enums.c_value(m, "r1") for m in _enums.members_at(offload.QueueInfo, "r1")] == [0, 1]
    assert sorted(_enums.members_at(offload.QueueInfo, "main"), key=lambda m: _enums.c_value(m, "main")) == [
        offload.QueueInfo.DEVICE, offload.QueueInfo.CONTEXT, offload.QueueInfo.EMPTY
    ]


def test_r1_signatures_lead() -> None:
    """R1's olMemAlloc(device, alloc_type, size) is the signature's head; main's context is an
    optional parameter after it, so R1 calls bind unchanged (what help's line shows)."""
    params = list(inspect.signature(offload.olMemAlloc).parameters.values())
    assert [p.name for p in params] == ["device", "alloc_type", "size", "context"]
    assert params[3].default is None
    inspect.signature(offload.olMemAlloc).bind(object(), offload.AllocType.DEVICE, 64)
