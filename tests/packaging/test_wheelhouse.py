"""Distributions as users get them: ``scripts/wheelhouse.sh`` builds an sdist and a wheel of every
distribution with plain ``python -m build`` (every Requires-Dist checked: pinned, never a file
URL); each backend installs by itself from that wheelhouse alone
(``--no-index``) into a fresh venv, pulling offload-core and nothing else of ours; the root installs
with each extra whose backend exists; ``pip install .`` works from a fresh checkout.

Third-party requirements (pluggy, structlog, a GPU backend's bindings, setuptools to build from
source) cannot come from the wheelhouse: the script downloads them into a second folder
(``thirdparty``), which every install here names as a second ``--find-links``. A backend whose
third-party wheels could not be downloaded is skipped with the download's error. pip runs with
no configuration file and no ``PIP_*`` variables, so nothing but the two folders is visible.

Set ``OFFLOAD_WHEELHOUSE=DIR`` to reuse a folder the script already filled.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import tomllib
import zipfile

import pytest
from helpers import child_environ

ROOT = pathlib.Path(__file__).resolve().parents[2]

VERSION = (ROOT / "core" / "src" / "offload" / "VERSION").read_text().strip()
BACKENDS = sorted(p.parent.name for p in (ROOT / "backends").glob("*/pyproject.toml"))


def _project_name(folder: pathlib.Path) -> str:
    return str(tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"])


DISTRIBUTIONS = {
    "offload-core": ROOT / "core",
    **{_project_name(ROOT / "backends" / b): ROOT / "backends" / b for b in BACKENDS},
    "offload-testing": ROOT / "testing",
    "offload-capi": ROOT / "capi",
    "offload": ROOT,
}
EXTRAS = [b for b in BACKENDS if b != "host"]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "OFFLOAD_", "PYTHONPATH"))}
    env["PIP_CONFIG_FILE"] = os.devnull  # no configured index or find-links: only what we name
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    reuse = os.environ.get("OFFLOAD_WHEELHOUSE")
    if reuse:
        return pathlib.Path(reuse)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "wheelhouse.sh"), str(out)], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _missing(wheelhouse: pathlib.Path, dist: str) -> str | None:
    for name in (dist, "setuptools"):
        report = wheelhouse / "thirdparty" / f"MISSING-{name.replace('-', '_')}.txt"
        if report.exists():
            return report.read_text().strip()[-500:] or "download failed"
    return None


def _fresh_venv(path: pathlib.Path) -> pathlib.Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def _install(python: pathlib.Path, wheelhouse: pathlib.Path | None, thirdparty: pathlib.Path, *what: str, cwd: pathlib.Path | None = None) -> None:
    links = ["--find-links", str(wheelhouse)] if wheelhouse is not None else []
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", *links, "--find-links", str(thirdparty), *what]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_pip_env(), cwd=cwd, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"


def _ours(python: pathlib.Path) -> set[str]:
    code = "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] for d in m.distributions()))"
    names = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return {_normalise(n) for n in names if _normalise(n).startswith("offload")}


def _offload_backends(python: pathlib.Path) -> str:
    env = child_environ(("OFFLOAD_", "PYTHONPATH"))
    proc = subprocess.run([str(python.parent / "offload"), "backends"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"\n$ offload backends  # {python.parent.parent.name}\n{proc.stdout}", end="")
    return proc.stdout


def _row(listing: str, backend: str) -> list[str]:
    (row,) = [line.split() for line in listing.splitlines() if line.split()[:1] == [backend]]
    return row


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
    dist = _project_name(ROOT / "backends" / backend)
    missing = _missing(wheelhouse, dist)
    if missing:
        pytest.skip(f"the third-party wheels {dist} needs could not be downloaded: {missing}")
    python = _fresh_venv(tmp_path / f"venv-{backend}")
    _install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", dist)
    # offload-core and nothing else of ours, but what a backend needs to run: offload-remote's
    # server is the host backend in another process
    needs = {"remote": {"offload-host"}}.get(backend, set())
    assert _ours(python) == {"offload-core", _normalise(dist)} | needs
    row = _row(_offload_backends(python), backend)
    assert row[1:3] == [dist, VERSION] and row[3] in ("loaded", "skipped")


@pytest.mark.parametrize("extra", ["", *EXTRAS])
def test_the_root_installs_with_each_extra(extra: str, wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    missing = _missing(wheelhouse, "offload") or (_missing(wheelhouse, f"offload-{extra}") if extra else None)
    if missing:  # the root needs numpy too
        pytest.skip(f"the third-party wheels offload[{extra}] needs could not be downloaded: {missing}")
    python = _fresh_venv(tmp_path / f"venv-offload-{extra or 'plain'}")
    _install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", f"offload[{extra}]" if extra else "offload")
    expected = {"offload", "offload-core", "offload-host"} | ({f"offload-{extra}"} if extra else set())
    assert _ours(python) == expected
    listing = _offload_backends(python)
    assert _row(listing, "host")[3] == "loaded"
    if extra:
        assert _row(listing, extra)[1] == f"offload-{extra}"


def test_pip_install_dot_from_a_fresh_checkout(wheelhouse: pathlib.Path, fresh_checkout: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The checkout needs no index for our distributions: the root requires its own folders."""
    missing = _missing(wheelhouse, "offload-core") or _missing(wheelhouse, "offload")
    if missing:
        pytest.skip(f"pluggy/structlog/numpy/setuptools could not be downloaded: {missing}")
    python = _fresh_venv(tmp_path / "venv-checkout")
    _install(python, None, wheelhouse / "thirdparty", ".", cwd=fresh_checkout)
    assert {"offload", "offload-core", "offload-host"} <= _ours(python)
    assert _row(_offload_backends(python), "host")[3] == "loaded"


def test_the_installed_version_is_the_one_place() -> None:
    import importlib.metadata

    import offload

    assert offload.__version__ == VERSION
    for dist in ("offload-core", "offload-host", "offload-testing", "offload"):
        assert importlib.metadata.version(dist) == VERSION
    for link in (ROOT / "VERSION", ROOT / "backends" / "host" / "VERSION", ROOT / "testing" / "VERSION", ROOT / "capi" / "VERSION"):
        assert link.is_symlink() and link.resolve() == (ROOT / "core" / "src" / "offload" / "VERSION").resolve()


def _metadata_texts(folder: pathlib.Path) -> dict[str, str]:
    """Every wheel's METADATA and every sdist's PKG-INFO in ``folder``, by file name."""
    import tarfile

    texts: dict[str, str] = {}
    for wheel in folder.glob("*.whl"):
        with zipfile.ZipFile(wheel) as z:
            texts[wheel.name] = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    for sdist in folder.glob("*.tar.gz"):
        with tarfile.open(sdist) as t:
            member = next(m for m in t.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"))
            handle = t.extractfile(member)
            assert handle is not None
            texts[sdist.name] = handle.read().decode()
    return texts


def test_no_metadata_names_a_file_url(wheelhouse: pathlib.Path) -> None:
    texts = _metadata_texts(wheelhouse / "wheelhouse")
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
    python = _fresh_venv(tmp_path / "venv")
    env = {**_pip_env(), "CC": "false", "LDSHARED": "false"}
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
    env = {k: v for k, v in _pip_env().items() if not k.startswith("PIP_")}
    for args in (["--sdist", str(ROOT / "backends" / "host")], ["--wheel", str(ROOT)]):
        proc = subprocess.run([str(builder), "-m", "build", "--outdir", str(tmp_path), *args],
                              capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
    texts = _metadata_texts(tmp_path)
    assert len(texts) == 2, texts.keys()
    for name, text in texts.items():
        requires = [l for l in text.splitlines() if l.startswith("Requires-Dist: offload")]
        assert requires and all(f"=={VERSION}" in l and "file:" not in l for l in requires), (name, requires)


def test_the_repaired_host_wheel_runs_a_kernel_without_a_compiler(wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A machine without a C compiler: the manylinux wheel installs (no build from source) and runs
    a prebuilt kernel; offload.build there says HOST_TOOL_NOT_FOUND."""
    import offload_host

    missing = _missing(wheelhouse, "offload-host")
    if missing:
        pytest.skip(f"the third-party wheels offload-host needs could not be downloaded: {missing}")
    python = _fresh_venv(tmp_path / "venv-no-cc")
    _install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", "--only-binary", ":all:", "offload-host")
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


def _requires(text: str) -> list[str]:
    return sorted(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:"))


def _dist_of(file_name: str) -> str:
    return _normalise(re.split(r"-\d", file_name, maxsplit=1)[0])


def test_every_distributions_requires_dist(wheelhouse: pathlib.Path) -> None:
    """Each distribution built by plain ``python -m build`` (sdist, then the wheel from it): the same
    Requires-Dist in both, every one a PEP 508 requirement without a URL, ours pinned ``==VERSION``,
    and exactly the distributions of ours each one needs."""
    from packaging.requirements import Requirement

    texts = _metadata_texts(wheelhouse / "wheelhouse")
    by_dist: dict[str, dict[str, list[str]]] = {}
    for name, text in texts.items():
        by_dist.setdefault(_dist_of(name), {})["wheel" if name.endswith(".whl") else "sdist"] = _requires(text)
    assert set(by_dist) == set(DISTRIBUTIONS), sorted(by_dist)
    extras = {f"offload-{b}" for b in EXTRAS}
    ours_expected = {
        "offload-core": set(),
        **{_project_name(ROOT / "backends" / b): {"offload-core"} for b in BACKENDS},
        "offload-remote": {"offload-core", "offload-host"},  # its server runs the host backend
        "offload-testing": {"offload-core"},
        "offload-capi": {"offload-core"},
        "offload": {"offload-core", "offload-host", "offload-testing"} | extras,
    }
    for dist, kinds in sorted(by_dist.items()):
        assert kinds.get("sdist") == kinds.get("wheel"), (dist, kinds)
        ours = set()
        for line in kinds["wheel"]:
            requirement = Requirement(line)
            assert requirement.url is None and "file:" not in line, (dist, line)
            name = _normalise(requirement.name)
            if name.startswith("offload"):
                assert str(requirement.specifier) == f"=={VERSION}", (dist, line)
                ours.add(name)
        assert ours == ours_expected[dist], (dist, kinds["wheel"])
    assert "pytest>=8" in by_dist["offload-testing"]["wheel"], by_dist["offload-testing"]
    assert not [l for l in by_dist["offload-core"]["wheel"] if l.startswith("pytest")]  # no pytest, no plugin


def test_extras_of_setup_py_are_declared_dynamic() -> None:
    """setuptools drops ``extras_require`` of a setup.py whose pyproject.toml does not list
    ``optional-dependencies`` as dynamic (offload-cuda[nvrtc] was silently empty so)."""
    for dist, folder in DISTRIBUTIONS.items():
        dynamic = tomllib.loads((folder / "pyproject.toml").read_text())["project"].get("dynamic", [])
        if "extras_require" in (folder / "setup.py").read_text():
            assert "optional-dependencies" in dynamic, f"{dist}: setup.py's extras_require needs dynamic optional-dependencies"


def test_every_extra_requires_something(wheelhouse: pathlib.Path) -> None:
    """Each wheel's extras (at least those the docs name) bring at least one requirement."""
    named = {"offload": {"test", *EXTRAS}, "offload-cuda": {"nvrtc"}, "offload-amdgpu": {"rocm6-4", "rocm10-0"}}
    for name, text in _metadata_texts(wheelhouse / "wheelhouse").items():
        if not name.endswith(".whl"):
            continue
        extras = {l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("Provides-Extra:")}
        assert named.get(_dist_of(name), set()) <= extras, (name, extras)
        for extra in extras:
            assert [r for r in _requires(text) if f'extra == "{extra}"' in r], (name, extra)


def test_amdgpu_pins_hip_python_per_rocm_line(wheelhouse: pathlib.Path) -> None:
    """offload-amdgpu's extras rocm<major>-<minor> each pin hip-python to that ROCm line."""
    from packaging.requirements import Requirement

    (wheel,) = [n for n in _metadata_texts(wheelhouse / "wheelhouse") if n.startswith("offload_amdgpu-") and n.endswith(".whl")]
    text = _metadata_texts(wheelhouse / "wheelhouse")[wheel]
    extras = [l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("Provides-Extra:")]
    assert {"rocm6-4", "rocm7-2", "rocm10-0"} <= set(extras), extras
    for extra in extras:
        (pin,) = [Requirement(r) for r in _requires(text) if f'extra == "{extra}"' in r]
        major, minor = extra.removeprefix("rocm").split("-")
        assert pin.name == "hip-python" and pin.specifier == Requirement(f"x>={major}.{minor},<{major}.{int(minor) + 1}").specifier


TINY_TEST = """
import json, os, sys

def test_tiny():
    with open(os.environ["OFFLOAD_REPORT"], "w") as report:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0].startswith("offload")), report)
"""


def _pytest(python: pathlib.Path, project: pathlib.Path, report: pathlib.Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = child_environ(("OFFLOAD_", "PYTHONPATH", "PYTEST_"))
    env["OFFLOAD_REPORT"] = str(report)
    return subprocess.run([str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *extra],
                          cwd=project, capture_output=True, text=True, env=env, timeout=600)  # fmt: skip


def test_offload_core_leaves_other_projects_pytest_alone(wheelhouse: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """offload-core and offload-host installed, offload-testing not: a plain ``pytest`` run of another
    project imports no ``offload`` module (no pytest11 plugin of ours). With offload-testing
    installed the kit's plugin loads, and the kit runs on the host backend."""
    missing = _missing(wheelhouse, "offload-host") or _missing(wheelhouse, "offload-testing")
    if missing:
        pytest.skip(f"the third-party wheels offload-host and offload-testing need could not be downloaded: {missing}")
    python = _fresh_venv(tmp_path / "venv")
    _install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", "offload-host", "pytest")
    assert _ours(python) == {"offload-core", "offload-host"}
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_tiny.py").write_text(TINY_TEST)
    report = tmp_path / "report.json"
    plain = _pytest(python, project, report)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert json.loads(report.read_text()) == [], "pytest imported offload modules without offload-testing"
    gone = subprocess.run([str(python), "-I", "-c", "import offload.testing.suite"], capture_output=True, text=True, timeout=120)
    assert gone.returncode != 0 and "pip install offload-testing" in gone.stderr, gone.stderr

    _install(python, wheelhouse / "wheelhouse", wheelhouse / "thirdparty", "offload-testing")
    with_kit = _pytest(python, project, report)
    assert with_kit.returncode == 0, with_kit.stdout + with_kit.stderr
    assert "offload_testing.plugin" in json.loads(report.read_text())  # the same check sees the plugin now
    (project / "tests" / "conftest.py").write_text("import os\nos.environ.setdefault('OFFLOAD_TEST_PLATFORM', 'host')\n")
    (project / "tests" / "test_conformance.py").write_text("from offload_testing.suite import *  # noqa: F401,F403\n")
    kit = _pytest(python, project, report)
    summary = kit.stdout.strip().splitlines()[-1]
    print(f"\nthe kit from the offload-testing wheel, on the host backend: {summary}")
    assert kit.returncode == 0, kit.stdout[-5000:] + kit.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None and int(passed.group(1)) > 150 and "failed" not in summary, summary
