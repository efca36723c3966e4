"""The bundle that lets the real-GPU run work on an air-gapped node: prepared here, installed there.

    python3 scripts/gpu_bundle.py prepare [--dest DIR] [--python PY] [--with NAME ...]
    python3 scripts/gpu_bundle.py install --bundle DIR --venv DIR

``prepare`` (a machine that reaches PyPI; ``scripts/gpu-bundle.sh`` calls it) builds the project's
wheels with the node's CPython minor (3.12 by default: ``--python``, else ``python3.12`` on PATH,
else pyenv's newest 3.12), their C extensions compiled in, and downloads the third-party wheels
the node lacks (``NODE_LACKS``, plus ``--with``) for that Python, into one folder (git-ignored,
``.gpu-bundle`` by default) with ``BUNDLE.md`` saying what is in it. It refuses a bundle over
``MAX_BYTES``: what travels to a node is limited.

``install`` (the node, with no index; ``scripts/real_gpu.py --offline`` runs it as its first
step) makes a virtual environment that sees the node's own packages (``--system-site-packages``,
and the packages of the interpreter running it where that is itself a virtual environment, as the
node's ``python3`` is) and installs offload-core, offload-host, offload-cuda and offload-testing from the bundle
with ``pip --no-index``: the prebuilt wheels where they fit the interpreter, else built from the
checkout (``--no-build-isolation``: the node's setuptools). It then names every module the run
needs that cannot be imported, and whether the compiled path was built.

Only the standard library: it runs before any install.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {"offload-core": "core", "offload-host": "backends/host", "offload-cuda": "backends/cuda",
                 "offload-testing": "testing"}  # the conformance kit
#: What the H200 nodes' image lacks of the run's needs (it has cuda-bindings 13, cuda-core, numpy,
#: pytest, pluggy, hypothesis, setuptools and nvidia-cuda-nvrtc: .library/device KINDS.md).
NODE_LACKS = ("structlog",)
#: Modules the run imports, and the distribution that provides each (named when one is missing).
RUN_NEEDS = {"offload_testing.suite": "offload-testing", "pluggy": "pluggy", "structlog": "structlog", "cuda.bindings.driver": "cuda-bindings",
             "pytest": "pytest", "hypothesis": "hypothesis", "numpy": "numpy"}  # fmt: skip
#: The extensions whose absence means the run measures the pure-Python path only.
COMPILED = ("offload._compiled._fastpath", "offload.objects._compiled._replay", "offload_host._native", "offload_cuda._native")
MAX_BYTES = 48 << 20  # the node takes 64 MiB of files in all: the checkout needs the rest
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")  # fmt: skip
PARENT_PTH = "_offload_parent_environment.pth"


class BundleError(Exception):
    """What stopped the preparation or the install: the one line to print."""


def run(command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    print(f"gpu_bundle: {' '.join(command)}", file=sys.stderr, flush=True)
    proc = subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
    return proc


def find_python(minor: str = "3.12") -> str:
    """A working ``python3.12``: on PATH, else pyenv's newest 3.12 (a pyenv shim on PATH that has no
    3.12 selected does not run, so each candidate is tried); BundleError naming where it looked."""
    candidates = [shutil.which(f"python{minor}") or ""]
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    for root in filter(None, roots):
        found = glob.glob(f"{root}/versions/{minor}.*/bin/python{minor}")
        candidates += sorted(found, key=lambda p: [int(x) for x in Path(p).parents[1].name.split(".") if x.isdigit()], reverse=True)
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "import venv, ensurepip"], capture_output=True).returncode == 0:
            return candidate
    raise BundleError(f"no working Python {minor}: none as python{minor} on PATH or in pyenv ({' or '.join(filter(None, roots))})")


def python_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout.strip()


def prepare(dest: Path, python: str, extra: list[str]) -> Path:
    """Builds the bundle in ``dest`` (emptied first); returns its ``BUNDLE.md``."""
    version = python_version(python)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    folders = [f"./{folder}" for folder in DISTRIBUTIONS.values()]
    # pinned requirements (==VERSION), never file URLs: the node installs by name from the folder
    if run([python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--wheel-dir", str(dest),
            *folders], OFFLOAD_PIN_REQUIREMENTS="1").returncode:  # fmt: skip
        raise BundleError(f"building the project's wheels with {python} failed (output above)")
    missing = [name for name in COMPILED if not _wheel_has(dest, name)]
    if missing:
        raise BundleError(f"the wheels lack compiled extensions {missing}: {python} could not build them (its headers?)")
    third = [*NODE_LACKS, *extra]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    if run([python, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
            "--python-version", version, "--implementation", "cp", *platforms, "--dest", str(dest), *third]).returncode:  # fmt: skip
        raise BundleError(f"downloading {third} for CPython {version} failed (output above)")
    size = sum(p.stat().st_size for p in dest.iterdir())
    if size > MAX_BYTES:
        raise BundleError(f"the bundle is {size >> 20} MiB, over the {MAX_BYTES >> 20} MiB a node can take with the checkout")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    files = sorted(p.name for p in dest.iterdir())
    manifest = dest / "BUNDLE.md"
    manifest.write_text("\n".join([
        f"# offload's real-GPU bundle for CPython {version}", "",
        f"- prepared: {time.strftime('%Y-%m-%d %H:%M:%S %Z')} from commit {commit or 'unknown'} with {python}",
        f"- size: {size / (1 << 20):.1f} MiB", "- files:", *[f"  - {name}" for name in files], "",
        "On the node, in the checkout with this folder beside it (nothing is fetched):", "",
        f"    bash scripts/cuda-real.sh --offline {dest.name} --report REPORT.md", ""]))  # fmt: skip
    return manifest


def _wheel_has(dest: Path, module: str) -> bool:
    path = module.replace(".", "/")
    distribution = {"offload": "offload_core"}.get(module.split(".")[0], module.split(".")[0])
    for wheel in dest.glob(f"{distribution}-*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            if any(n.startswith(f"{path}.") and n.endswith(".so") for n in archive.namelist()):
                return True
    return False


def parent_site_packages() -> list[str]:
    """The running interpreter's own site-packages where it is a virtual environment (a venv made
    from it with ``--system-site-packages`` sees only its base interpreter's), else nothing."""
    if sys.prefix == sys.base_prefix:
        return []
    return [p for p in site.getsitepackages() if Path(p).is_dir()]


def make_venv(venv: Path) -> Path:
    """A fresh venv seeing the node's packages; returns its python."""
    if venv.exists():
        shutil.rmtree(venv)
    if run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)]).returncode:
        raise BundleError(f"{sys.executable} -m venv {venv} failed (output above)")
    python = venv / "bin" / "python"
    parents = parent_site_packages()
    if parents:
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                 capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        # after the venv's own directory: what the bundle installs wins over the parent's copy
        lines = [f"import site; site.addsitedir({p!r})" for p in parents]
        (Path(purelib) / PARENT_PTH).write_text("\n".join(lines) + "\n")
        print(f"gpu_bundle: {venv} also sees {', '.join(parents)} (the running interpreter's virtual environment)", file=sys.stderr)
    return python


def install(bundle: Path, venv: Path) -> None:
    """The offline install; prints what it did, raises BundleError naming what is missing."""
    if not bundle.is_dir():
        raise BundleError(f"no bundle at {bundle}: prepare it with scripts/gpu-bundle.sh on a machine that reaches PyPI")
    python = str(make_venv(venv))
    # --no-deps: the node's own versions stand (a requirement pip would "upgrade" has nothing to upgrade
    # to here); what the run needs is checked by importing it below, and named where it is missing
    base = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--no-deps",
            "--find-links", str(bundle)]  # fmt: skip
    lacking = subprocess.run([python, "-c", "import structlog"], capture_output=True).returncode != 0
    if lacking and run([*base, *NODE_LACKS]).returncode:
        raise BundleError(f"{', '.join(NODE_LACKS)} did not install from the bundle (output above)")
    if run([*base, *DISTRIBUTIONS]).returncode == 0:
        how = "the bundle's prebuilt wheels"
    else:
        print("gpu_bundle: the prebuilt wheels do not fit this interpreter: building from the checkout", file=sys.stderr)
        folders = [f"./{folder}" for folder in DISTRIBUTIONS.values()]
        if run([*base, "--no-build-isolation", *folders]).returncode:
            raise BundleError("neither the bundle's wheels nor a build from the checkout installed (output above)")
        how = "a build from the checkout"
    probe = ("import importlib, sys\n"
             "for m in sys.argv[1:]:\n"
             "    try: importlib.import_module(m)\n"
             "    except Exception as e: print(m, type(e).__name__, e)\n")  # fmt: skip
    missing = subprocess.run([python, "-c", probe, *RUN_NEEDS], capture_output=True, text=True).stdout.splitlines()
    if missing:
        names = sorted({RUN_NEEDS[line.split()[0]] for line in missing})
        raise BundleError(f"the run needs {', '.join(names)} ({'; '.join(missing)}): add them with "
                          f"scripts/gpu-bundle.sh --with {' --with '.join(names)}")  # fmt: skip
    absent = subprocess.run([python, "-c", probe, *COMPILED], capture_output=True, text=True).stdout.splitlines()
    compiled = "the compiled path is built" if not absent else f"WITHOUT the compiled path ({'; '.join(absent)})"
    versions = subprocess.run([python, "-c", "from importlib.metadata import version as v; "
                               "print(', '.join(f'{n} {v(n)}' for n in ('cuda-bindings', 'pluggy', 'structlog', 'numpy', 'pytest')))"],
                              capture_output=True, text=True).stdout.strip()  # fmt: skip
    tag = sysconfig.get_config_var("SOABI")
    print(f"gpu_bundle: installed offload from {how} into {venv} ({tag}); {compiled}; beside {versions}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gpu_bundle.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    prep = sub.add_parser("prepare", help="build the bundle (needs PyPI)")
    prep.add_argument("--dest", type=Path, default=ROOT / ".gpu-bundle")
    prep.add_argument("--python", help="the node's CPython (default: 3.12 from PATH or pyenv)")
    prep.add_argument("--with", dest="extra", action="append", default=[], help="another wheel the node lacks")
    inst = sub.add_parser("install", help="install offline from the bundle")
    inst.add_argument("--bundle", type=Path, required=True)
    inst.add_argument("--venv", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.verb == "prepare":
            manifest = prepare(args.dest.resolve(), args.python or find_python(), args.extra)
            print(manifest.read_text(), end="")
        else:
            install(args.bundle.resolve(), args.venv.resolve())
    except BundleError as exc:
        print(f"gpu_bundle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
