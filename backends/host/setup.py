"""Builds the native part of offload-host, and pins offload-core to the shared VERSION
(everything else lives in pyproject.toml)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _offload_setup.py: a link to the checkout root's
from _offload_setup import requirement  # noqa: E402  (an sdist carries a copy)
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.sdist import sdist  # noqa: E402

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
