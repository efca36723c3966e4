"""Builds offload-core's optional C extensions, offload._compiled._fastpath (the compiled per-call path,
core/DESIGN.md "The compiled path"), offload.objects._launch_memo (the object layer's
remembered launch) and offload.objects._copier (its common copies); everything else lives in
pyproject.toml.

The extensions are optional: where they cannot be compiled (no C compiler, no Python headers) the
build goes on without them and the package runs its pure-Python path, which ``OFFLOAD_COMPILED=0``
also selects at run time.

The build also compiles the generated ol* entry points ahead of time (``build_py`` below): a
child interpreter of the building Python loads ``offload._api.codegen`` and ``offload._api.codecache``
from the build tree, without running the package's ``__init__`` (whose dependencies the build
does not have), and writes the cache that ``import offload`` would otherwise compile (10 ms).
Where that fails the build goes on, and the first import compiles as before."""

import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

_PRECOMPILE = """
import os, sys, types
package = types.ModuleType("offload")
package.__path__ = [os.path.join(sys.argv[1], "offload")]
sys.modules["offload"] = package
from offload._api.codecache import DEFAULT_CACHE, store
from offload._api.codegen import sources
store(DEFAULT_CACHE, sources())
"""


class BuildPyWithEntryPoints(build_py):
    """``build_py``, then the ol* entry points compiled into the build tree's ``__pycache__``."""

    def run(self) -> None:
        super().run()
        done = subprocess.run([sys.executable, "-c", _PRECOMPILE, os.path.abspath(self.build_lib)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"offload-core: entry points not precompiled (compiled at first import): {done.stderr.strip()[-500:]}")


FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]


def optional(name: str, sources: list[str], depends: list[str]) -> Extension:
    """One optional C extension (paths below src/offload): skipped where it cannot be built."""
    root = "src/offload/"
    return Extension(
        name, sources=[root + s for s in sources], depends=[root + d for d in depends], extra_compile_args=FLAGS, optional=True
    )


setup(
    cmdclass={"build_py": BuildPyWithEntryPoints},
    ext_modules=[
        optional(
            "offload._compiled._fastpath",
            ["_compiled/_fastpath.c", "_compiled/_fastpath_ops.c"],
            ["_compiled/_fastpath.h", "include/offload_native.h"],
        ),
        optional("offload.objects._launch_memo", ["objects/_launch_memo.c"], ["objects/_cmethod.h"]),
        optional("offload.objects._copier", ["objects/_copier.c"], ["objects/_cmethod.h"]),
    ],
)
