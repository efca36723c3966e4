"""Distributions as users get them: ``scripts/wheelhouse.sh`` builds an sdist and a wheel of every
distribution with plain ``python -m build``; each backend installs by itself from that wheelhouse
alone (``--no-index``) into a fresh venv, pulling offload-core and nothing else of ours; the root
installs with each extra whose backend exists; ``pip install .`` works from a fresh checkout; the
repaired host wheel runs a kernel without a compiler. Versions and pins come from one place.

Set ``OFFLOAD_WHEELHOUSE=DIR`` to reuse a folder the script already filled (wheelhouse_support.py
says which folders every install sees)."""

from __future__ import annotations

import pathlib
import subprocess
import zipfile

import pytest
from helpers import child_environ

import wheelhouse_support as wh
from wheelhouse_support import BACKENDS, DISTRIBUTIONS, EXTRAS, ROOT, VERSION


def test_every_distribution_has_an_sdist_and_a_wheel(wheelhouse: pathlib.Path) -> None:
    files = sorted(p.name for p in (wheelhouse / "wheelhouse").iterdir())
    for dist in DISTRIBUTIONS:
        stem = f"{dist.replace('-', '_')}-{VERSION}"
        assert [f for f in files if f.startswith(stem) and f.endswith(".whl")], f"no wheel of {dist}: {files}"
        assert f"{stem}.tar.gz" in files or f"{dist}-{VERSION}.tar.gz" in files, f"no sdist of {dist}: {files}"


def test_versions_and_pins_come_from_one_place(wheelhouse: pathlib.Path) -> None:
    for wheel in (wheelhouse / "wheelhouse").glob("*.whl"):
        with zipfile.ZipFile(wheel) as z:
            meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        assert f"\nVersion: {VERSION}\n" in meta, wheel.name
        for line in meta.splitlines():
            if line.startswith("Requires-Dist: offload"):
                assert f"=={VERSION}" in line, f"{wheel.name}: {line} is not pinned to VERSION {VERSION}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_installs_alone_from_the_wheelhouse(backend: str, wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    dist = wh.project_name(ROOT / "backends" / backend)
    missing = wh.missing(wheelhouse, dist)
    if missing:
        pytest.skip(f"the third-party wheels {dist} needs could not be downloaded: {missing}")
    python = wh.fresh_venv(tmp_path / f"venv-{backend}")
    wh.install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", dist)
    # offload-core and nothing else of ours, but what a backend needs to run: offload-remote's
    # server is the host backend in another process
    needs = {"remote": {"offload-host"}}.get(backend, set())
    assert wh.ours(python) == {"offload-core", wh.normalise(dist)} | needs
    row = wh.row(wh.offload_backends(python), backend)
    assert row[1:3] == [dist, VERSION] and row[3] in ("loaded", "skipped")


@pytest.mark.parametrize("extra", ["", *EXTRAS])
def test_the_root_installs_with_each_extra(extra: str, wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    missing = wh.missing(wheelhouse, "offload") or (wh.missing(wheelhouse, f"offload-{extra}") if extra else None)
    if missing:  # the root needs numpy too
        pytest.skip(f"the third-party wheels offload[{extra}] needs could not be downloaded: {missing}")
    python = wh.fresh_venv(tmp_path / f"venv-offload-{extra or 'plain'}")
    wh.install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", f"offload[{extra}]" if extra else "offload")
    expected = {"offload", "offload-core", "offload-host"} | ({f"offload-{extra}"} if extra else set())
    assert wh.ours(python) == expected
    listing = wh.offload_backends(python)
    assert wh.row(listing, "host")[3] == "loaded"
    if extra:
        assert wh.row(listing, extra)[1] == f"offload-{extra}"


def test_pip_install_dot_from_a_fresh_checkout(wheelhouse: pathlib.Path, fresh_checkout: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The checkout needs no index for our distributions: the root requires its own folders."""
    missing = wh.missing(wheelhouse, "offload-core") or wh.missing(wheelhouse, "offload")
    if missing:
        pytest.skip(f"pluggy/structlog/numpy/setuptools could not be downloaded: {missing}")
    python = wh.fresh_venv(tmp_path / "venv-checkout")
    wh.install(python, None, wheelhouse / "thirdparty", ".", cwd=fresh_checkout)
    assert {"offload", "offload-core", "offload-host"} <= wh.ours(python)
    assert wh.row(wh.offload_backends(python), "host")[3] == "loaded"


def test_the_installed_version_is_the_one_place() -> None:
    import importlib.metadata

    import offload

    assert offload.__version__ == VERSION
    for dist in ("offload-core", "offload-host", "offload-testing", "offload"):
        assert importlib.metadata.version(dist) == VERSION
    for link in (ROOT / "VERSION", ROOT / "backends" / "host" / "VERSION", ROOT / "testing" / "VERSION", ROOT / "capi" / "VERSION"):
        assert link.is_symlink() and link.resolve() == (ROOT / "core" / "src" / "offload" / "VERSION").resolve()


def test_the_repaired_host_wheel_runs_a_kernel_without_a_compiler(wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A machine without a C compiler: the manylinux wheel installs (no build from source) and runs
    a prebuilt kernel; offload.build there says HOST_TOOL_NOT_FOUND."""
    import offload_host

    missing = wh.missing(wheelhouse, "offload-host")
    if missing:
        pytest.skip(f"the third-party wheels offload-host needs could not be downloaded: {missing}")
    python = wh.fresh_venv(tmp_path / "venv-no-cc")
    wh.install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", "--only-binary", ":all:", "offload-host")
    image = tmp_path / "foo.so"
    image.write_bytes(offload_host.build_test_kernel("foo"))
    code = f"""
import ctypes, shutil, struct, sys
import offload as ol
assert shutil.which("cc") is None and shutil.which("gcc") is None, "a compiler is visible"
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
host = found[-1]
program = ol.olCreateProgram(host, open({str(image)!r}, "rb").read())
kernel = ol.olGetSymbol(program, "foo", ol.SymbolKind.KERNEL)
out = ol.olMemAlloc(host, ol.AllocType.MANAGED, 64 * 4)
ol.olLaunchKernel(None, host, kernel, struct.pack("P", out), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (64, 1, 1)))
values = list((ctypes.c_uint32 * 64).from_address(out))
try:
    ol.build("int x;", host)
    refusal = "built"
except ol.OffloadError as error:
    refusal = error.code.name
ol.olMemFree(out); ol.olDestroyProgram(program); ol.olShutDown()
print(values == list(range(64)), refusal)
"""
    env = child_environ(("OFFLOAD_", "PYTHONPATH"))
    env.update(CC="false", PATH=str(python.parent))
    proc = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["True", "HOST_TOOL_NOT_FOUND"], proc.stdout
