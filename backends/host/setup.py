"""Builds the native part of offload-host, and pins offload-core to the shared VERSION
(everything else lives in pyproject.toml)."""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
VERSION = (HERE / "VERSION").read_text().strip()
# offload_native.h, the contract of the core's native entry points (_hostentry.c), is the core's:
# read from the checkout's core, or from the copy an sdist of this folder carries (see Sdist)
NATIVE_HEADER = "offload_native.h"
CORE_INCLUDE = HERE.parent.parent / "core" / "src" / "offload" / "include"
SDIST_INCLUDE = HERE / "src" / "offload_host" / "include" / "core"


class Sdist(sdist):
    """An sdist carrying a copy of the core's offload_native.h (it is built without the checkout)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        target = Path(base_dir) / SDIST_INCLUDE.relative_to(HERE)
        target.mkdir(parents=True, exist_ok=True)
        (target / NATIVE_HEADER).write_bytes((CORE_INCLUDE / NATIVE_HEADER).read_bytes())



def _checkout_install() -> bool:
    """Whether pip is installing this folder of a checkout (pip sets ``PIP_BUILD_TRACKER``, older pips
    ``PIP_REQ_TRACKER``, while it builds): only then are our other distributions required as file
    URLs of their folders. An sdist, any other front end (``python -m build``, whose wheels are
    built from the sdist or pinned the same) and ``OFFLOAD_PIN_REQUIREMENTS=1`` pin ``==VERSION``,
    so nothing meant for an index carries a file URL."""
    if os.environ.get("OFFLOAD_PIN_REQUIREMENTS") == "1" or "sdist" in sys.argv:
        return False
    return "PIP_BUILD_TRACKER" in os.environ or "PIP_REQ_TRACKER" in os.environ

def requirement(name: str, folder: str) -> str:
    """``name==VERSION``; from a checkout (the folder exists, OFFLOAD_PIN_REQUIREMENTS unset) the
    folder itself, so ``pip install ./backends/host`` works before anything is published."""
    path = (HERE / folder).resolve()
    if _checkout_install() and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.as_uri()}"
    return f"{name}=={VERSION}"


setup(
    cmdclass={"sdist": Sdist},
    install_requires=[requirement("offload-core", "../../core")],
    ext_modules=[
        Extension(
            "offload_host._native",
            sources=["src/offload_host/_native.c", "src/offload_host/_hostq.c", "src/offload_host/_hostentry.c",
                     "src/offload_host/_fault.c", "src/offload_host/_checkmem.c"],
            include_dirs=[str(CORE_INCLUDE if (CORE_INCLUDE / NATIVE_HEADER).is_file() else SDIST_INCLUDE)],
            depends=["src/offload_host/_native.h", "src/offload_host/include/offload_host.h"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
            libraries=["pthread", "dl"],
        )
    ],
)
