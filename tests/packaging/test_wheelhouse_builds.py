"""The wheels and sdists ``scripts/wheelhouse.sh`` builds: no metadata names a file URL, the host
and core wheels are repaired to manylinux tags, the core wheel carries the compiled path (and its
sdist builds without a compiler into the pure-Python one), ``python -m build`` pins without the
switch."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import zipfile

import pytest

import wheelhouse_support as wh
from wheelhouse_support import ROOT, VERSION


def test_no_metadata_names_a_file_url(wheelhouse: pathlib.Path) -> None:
    texts = wh.metadata_texts(wheelhouse / "wheelhouse")
    assert any(name.endswith(".tar.gz") for name in texts) and any(name.endswith(".whl") for name in texts)
    for name, text in texts.items():
        assert "file:" not in text and " @ " not in "\n".join(l for l in text.splitlines() if l.startswith("Requires-Dist")), name


def test_the_host_wheel_is_repaired_to_a_manylinux_tag(wheelhouse: pathlib.Path) -> None:
    wheels = sorted(p.name for p in (wheelhouse / "wheelhouse").glob("offload_host-*.whl"))
    assert len(wheels) == 1 and re.search(r"-manylinux_\d+_\d+_\w+\.whl$", wheels[0]), wheels
    assert not [p for p in (wheelhouse / "wheelhouse").glob("*.whl") if re.search(r"-linux_\w+\.whl$", p.name)]


def test_the_core_wheel_carries_the_compiled_path(wheelhouse: pathlib.Path) -> None:
    """offload-core's wheel (built from its sdist) holds offload._compiled._fastpath and the object layer's
    records and replaying methods (_replay: its headers are in the sdist), repaired to a
    manylinux tag, and the generated entry points as modules (offload/_api/generated/)."""
    wheels = sorted((wheelhouse / "wheelhouse").glob("offload_core-*.whl"))
    assert len(wheels) == 1 and re.search(r"manylinux\w*\.whl$", wheels[0].name), wheels
    with zipfile.ZipFile(wheels[0]) as wheel:
        assert [n for n in wheel.namelist() if re.fullmatch(r"offload/_compiled/_fastpath\..*\.so", n)], wheel.namelist()
        assert "offload/_api/generated/__init__.py" in wheel.namelist(), wheel.namelist()
        assert [n for n in wheel.namelist() if re.fullmatch(r"offload/objects/_compiled/_replay\..*\.so", n)], wheel.namelist()


def test_the_core_builds_without_a_compiler_into_the_python_path(wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The core's sdist on a machine without a working C compiler: the optional extension is left
    out, and the installed core runs its pure-Python path."""
    sdists = sorted((wheelhouse / "wheelhouse").glob("offload_core-*.tar.gz"))
    assert len(sdists) == 1, sdists
    python = wh.fresh_venv(tmp_path / "venv")
    env = {**wh.pip_env(), "CC": "false", "LDSHARED": "false"}
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", "--no-binary", "offload-core",
           "--find-links", str(wheelhouse / "thirdparty"), str(sdists[0])]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # pip compiled the generated entry points at install (looked for before any import could write them)
    look = ("import importlib.util, os; print(os.listdir(os.path.join("
            "importlib.util.find_spec('offload').submodule_search_locations[0], '_api', 'generated', '__pycache__')))")
    listed = subprocess.run([str(python), "-I", "-c", look], capture_output=True, text=True, timeout=120)
    assert re.search(r"'memory\.[\w-]+\.pyc'", listed.stdout), listed.stdout + listed.stderr
    code = "import offload, offload._core.native as n; print(n._fastpath, n.ENABLED, type(offload.olLaunchKernel).__name__)"
    run = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["None", "False", "function"], run.stdout + run.stderr


def test_python_m_build_pins_without_the_switch(wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The standard front end alone (no OFFLOAD_PIN_REQUIREMENTS): an sdist, and a wheel built
    straight from the tree, both pin our distributions to VERSION."""
    builder = ROOT / ".venv-build" / "bin" / "python"
    if not builder.exists():
        pytest.skip("scripts/wheelhouse.sh did not make .venv-build (OFFLOAD_WHEELHOUSE reuses another folder)")
    env = {k: v for k, v in wh.pip_env().items() if not k.startswith("PIP_")}
    for args in (["--sdist", str(ROOT / "backends" / "host")], ["--wheel", str(ROOT)]):
        proc = subprocess.run([str(builder), "-m", "build", "--outdir", str(tmp_path), *args],
                              capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
    texts = wh.metadata_texts(tmp_path)
    assert len(texts) == 2, texts.keys()
    for name, text in texts.items():
        requires = [l for l in text.splitlines() if l.startswith("Requires-Dist: offload")]
        assert requires and all(f"=={VERSION}" in l and "file:" not in l for l in requires), (name, requires)
