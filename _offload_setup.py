"""What the setup.py of every distribution in this checkout shares: the one VERSION, our other
distributions required at it, and a GPU backend's native entry points. This file is the root's;
each distribution's folder reaches it by a link (``_offload_setup.py``) and its sdist carries a copy,
so every folder still builds alone. Its setup.py imports it from that folder (``sys.path[0]``).

``HERE`` is the folder of the distribution being built: the folder this file was imported from,
the link's (never resolved, ``os.path.abspath``), not the checkout root's."""

import os
import sys
from pathlib import Path

from setuptools import Extension

HERE = Path(os.path.abspath(__file__)).parent
VERSION = (HERE / "VERSION").read_text().strip()  # a link to core/src/offload/VERSION (a copy in an sdist)


def _checkout_install() -> bool:
    """Whether pip is installing this folder of a checkout (pip sets ``PIP_BUILD_TRACKER``, older pips
    ``PIP_REQ_TRACKER``, while it builds): only then are our other distributions required as file
    URLs of their folders. An sdist, any other front end (``python -m build``, whose wheels are
    built from the sdist or pinned the same) and ``OFFLOAD_PIN_REQUIREMENTS=1`` pin ``==VERSION``,
    so nothing meant for an index carries a file URL."""
    if os.environ.get("OFFLOAD_PIN_REQUIREMENTS") == "1" or "sdist" in sys.argv:
        return False
    return "PIP_BUILD_TRACKER" in os.environ or "PIP_REQ_TRACKER" in os.environ


def requirement(name: str, folder: str, extra: str = "") -> str:
    """Our distribution ``name`` (with ``extra``) at ``==VERSION``; while pip installs a checkout's
    folder, the distribution's own folder (``folder``, relative to ``HERE``) as a file URL, so
    ``pip install ./backends/cuda`` works before anything is published."""
    path = (HERE / folder).resolve()
    name = f"{name}[{extra}]" if extra else name
    if _checkout_install() and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.as_uri()}"
    return f"{name}=={VERSION}"


def gpu_native(package: str) -> Extension:
    """A GPU backend's native entry points ``<package>._native``, on its bindings' C API (no Cython
    needed). ``src/<package>/native_include`` links to the core's headers (an sdist carries copies);
    ``optional``: where the build fails the backend serves through its Python hooks alone."""
    include = f"src/{package}/native_include"
    return Extension(f"{package}._native", [f"src/{package}/_native.c"], include_dirs=[include], optional=True,
                     depends=[f"{include}/offload_native.h", f"{include}/offload_native_gpu.h"],
                     extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"])
