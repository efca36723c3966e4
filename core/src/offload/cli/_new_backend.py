"""``offload new-backend NAME [--dir DIR]``: write a complete, installable backend package.

The package (default directory ``./offload-NAME``) holds ``pyproject.toml`` with both entry points
(``offload.backends`` and ``offload.conformance``), a backend module whose required and memory
hooks work for an in-memory device (``--async``: one whose queues run on threads of their own, with
events and host functions), its ``Capabilities``, the two test files that run the whole
conformance kit, and a README. Freshly generated it installs, shows in ``offload backends`` and
passes the kit. The files come from ``templates/new_backend/*.tmpl`` (``string.Template``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import string
import sys
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from .._version import __version__
from ._common import EXIT_NOTHING, EXIT_OK

#: Template file -> where it goes in the package (``{package}`` is the import package).
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "__init__.py.tmpl": "src/{package}/__init__.py",
    "backend.py.tmpl": "src/{package}/_backend.py",
    "conformance.py.tmpl": "src/{package}/conformance.py",
    "conftest.py.tmpl": "tests/conftest.py",
    "test_conformance.py.tmpl": "tests/test_conformance.py",
}
#: Names the generated distribution ``offload-NAME`` or package ``offload_NAME`` must not take:
#: "host" devices are host memory, cuda/amdgpu/level_zero are ``PlatformBackend`` names, and
#: ``offload-core`` (and the packages of our own distributions) would replace the real ones.
RESERVED = frozenset({"host", "cuda", "amdgpu", "level_zero", "core", "testing", "cli", "objects"})
MAX_NAME = 40  # the name is part of file names, a class name and a distribution name
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class NewBackendError(ValueError):
    """The name or the target directory cannot be used (nothing was written)."""


def substitutions(name: str) -> dict[str, str]:
    """The template values for platform ``name``: package ``offload_<name>``, class prefix."""
    if not _NAME.match(name):
        raise NewBackendError(f"NAME must be lower case letters, digits and '_', starting with a letter: {name!r}")
    if len(name) > MAX_NAME:
        raise NewBackendError(f"NAME is {len(name)} characters long; at most {MAX_NAME} are allowed")
    normalised = re.sub(r"_+", "_", name).strip("_")  # offload-core_ and offload_core are offload-core to pip
    if name in RESERVED or normalised in RESERVED:
        raise NewBackendError(
            f"{name!r} is reserved: offload-{normalised} is one of offload's own distributions or names a "
            "PlatformBackend; choose another name"
        )
    taken = _installed_names()
    if normalised in taken:
        raise NewBackendError(f"{name!r} is taken: {taken[normalised]} is installed; choose another name")
    return {
        "name": name,
        "package": f"offload_{name}",
        "Class": "".join(part.capitalize() for part in name.split("_")),
        "core_version": __version__,
    }


def _installed_names() -> dict[str, str]:
    """Backend names and ``offload-*`` distribution suffixes in use here -> what uses them."""
    from importlib.metadata import distributions, entry_points  # here, not at the top: importlib.metadata takes ~25 ms to import, which only this command pays

    taken: dict[str, str] = {}
    for ep in entry_points(group="offload.backends"):
        taken.setdefault(ep.name.replace("-", "_"), f"the backend {ep.name!r}")
    for dist in distributions():
        dist_name = re.sub(r"[-_.]+", "-", (dist.metadata["Name"] or "").lower())
        if dist_name.startswith("offload-"):
            taken.setdefault(dist_name[len("offload-") :].replace("-", "_"), f"the distribution {dist_name}")
    return taken


#: ``--async``: the backend module for an asynchronous device (queue threads, events, host functions).
ASYNC_BACKEND = "backend_async.py.tmpl"


def write_package(name: str, directory: Path, asynchronous: bool = False) -> list[Path]:
    """Write the package for backend ``name`` into ``directory``; return the files written.
    ``asynchronous``: the backend module of an asynchronous device (``--async``).

    ``directory`` must not exist or be empty, and must be creatable (``NewBackendError``
    otherwise, with nothing left behind).
    """
    values = substitutions(name)
    try:
        if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
            raise NewBackendError(f"{directory} already exists and is not an empty directory")
        for parent in directory.parents:
            if parent.exists() and not parent.is_dir():
                raise NewBackendError(f"cannot create {directory}: {parent} is a file, not a directory")
    except OSError as error:
        raise NewBackendError(f"cannot use {directory}: {error.strerror or error}") from None
    templates = resources.files("offload.cli") / "templates" / "new_backend"
    created = not directory.exists()
    written: list[Path] = []
    try:
        for template, target in FILES.items():
            source = ASYNC_BACKEND if asynchronous and template == "backend.py.tmpl" else template
            text = string.Template((templates / source).read_text(encoding="utf-8")).substitute(values)
            path = directory / target.format(**values)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as error:
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            for path in written:
                path.unlink(missing_ok=True)
        raise NewBackendError(f"cannot write into {directory}: {error.strerror or error}") from None
    return written


def add_parser(commands: Any) -> None:
    """Register ``new-backend`` on the ``offload`` command's subparsers."""
    parser = commands.add_parser("new-backend", help="write a new backend package that passes the conformance kit")
    parser.add_argument("name", metavar="NAME", help="the platform name (lower case, e.g. mydev)")
    parser.add_argument("--dir", type=Path, metavar="DIR", help="where to write it (default ./offload-NAME)")
    parser.add_argument(
        "--async", dest="asynchronous", action="store_true",
        help="an asynchronous device: queues on threads of their own, events, host functions (default: synchronous)",
    )  # fmt: skip
    parser.set_defaults(run=cmd_new_backend)


def cmd_new_backend(args: argparse.Namespace, out: TextIO) -> int:
    directory = args.dir if args.dir is not None else Path(f"offload-{args.name}")
    try:
        written = write_package(args.name, directory, args.asynchronous)
    except NewBackendError as error:
        print(f"offload new-backend: {error}", file=sys.stderr)
        return EXIT_NOTHING
    print(f"Wrote the {args.name} backend package to {directory}:", file=out)
    for path in written:
        print(f"  {path.relative_to(directory)}", file=out)
    shown = str(directory) if directory.is_absolute() else f"./{directory}"
    print(f"Next: pip install -e '{shown}[test]' && offload backends && pytest {shown}", file=out)
    return EXIT_OK
