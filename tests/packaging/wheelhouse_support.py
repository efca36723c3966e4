"""What the wheelhouse tests share (tests/packaging/test_wheelhouse_*.py; the ``wheelhouse``
fixture, which runs ``scripts/wheelhouse.sh`` once a session, is in conftest.py): the checkout's
version, backends and distributions, and helpers that make fresh venvs, install into them from
the wheelhouse alone, and read what got installed and what the built metadata requires.

Third-party requirements (pluggy, structlog, a GPU backend's bindings, setuptools to build from
source) cannot come from the wheelhouse: the script downloads them into a second folder
(``thirdparty``), which every install here names as a second ``--find-links``. A backend whose
third-party wheels could not be downloaded is skipped with the download's error. pip runs with
no configuration file and no ``PIP_*`` variables, so nothing but the two folders is visible.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tomllib
import zipfile

from helpers import child_environ

ROOT = pathlib.Path(__file__).resolve().parents[2]

VERSION = (ROOT / "core" / "src" / "offload" / "VERSION").read_text().strip()
BACKENDS = sorted(p.parent.name for p in (ROOT / "backends").glob("*/pyproject.toml"))


def project_name(folder: pathlib.Path) -> str:
    """The distribution name in ``folder``'s pyproject.toml."""
    return str(tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"])


DISTRIBUTIONS = {
    "offload-core": ROOT / "core",
    **{project_name(ROOT / "backends" / b): ROOT / "backends" / b for b in BACKENDS},
    "offload-testing": ROOT / "testing",
    "offload-capi": ROOT / "capi",
    "offload": ROOT,
}
EXTRAS = [b for b in BACKENDS if b != "host"]


def normalise(name: str) -> str:
    """A distribution name as PEP 503 normalises it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_env() -> dict[str, str]:
    """This environment without PIP_*, OFFLOAD_* and PYTHONPATH, pip told to read no configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "OFFLOAD_", "PYTHONPATH"))}
    env["PIP_CONFIG_FILE"] = os.devnull  # no configured index or find-links: only what we name
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def missing(wheelhouse: pathlib.Path, dist: str) -> str | None:
    """Why the third-party wheels of ``dist`` (or setuptools) could not be downloaded; None if they were."""
    for name in (dist, "setuptools"):
        report = wheelhouse / "thirdparty" / f"MISSING-{name.replace('-', '_')}.txt"
        if report.exists():
            return report.read_text().strip()[-500:] or "download failed"
    return None


def fresh_venv(path: pathlib.Path) -> pathlib.Path:
    """A new venv at ``path`` (no pip: this interpreter's pip installs into it); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def install(python: pathlib.Path, wheelhouse: pathlib.Path | None, thirdparty: pathlib.Path, *what: str, cwd: pathlib.Path | None = None) -> None:
    """pip install ``what`` for ``python`` from the two folders alone (``--no-index``)."""
    links = ["--find-links", str(wheelhouse)] if wheelhouse is not None else []
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", *links, "--find-links", str(thirdparty), *what]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=pip_env(), cwd=cwd, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"


def ours(python: pathlib.Path) -> set[str]:
    """The distributions of ours installed for ``python`` (normalised names)."""
    code = "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] for d in m.distributions()))"
    names = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return {normalise(n) for n in names if normalise(n).startswith("offload")}


def offload_backends(python: pathlib.Path) -> str:
    """What ``offload backends`` of ``python``'s venv prints (and shows it in the log)."""
    env = child_environ(("OFFLOAD_", "PYTHONPATH"))
    proc = subprocess.run([str(python.parent / "offload"), "backends"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"\n$ offload backends  # {python.parent.parent.name}\n{proc.stdout}", end="")
    return proc.stdout


def row(listing: str, backend: str) -> list[str]:
    """The words of ``backend``'s row in an ``offload backends`` listing."""
    (row,) = [line.split() for line in listing.splitlines() if line.split()[:1] == [backend]]
    return row


def metadata_texts(folder: pathlib.Path) -> dict[str, str]:
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


def requires(text: str) -> list[str]:
    """The Requires-Dist lines of a METADATA or PKG-INFO text, sorted."""
    return sorted(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:"))


def dist_of(file_name: str) -> str:
    """The normalised distribution name of a wheel or sdist file name."""
    return normalise(re.split(r"-\d", file_name, maxsplit=1)[0])

