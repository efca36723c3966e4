"""Builds offload-core's optional C extensions, offload._compiled._fastpath (the compiled per-call path,
core/DESIGN.md "The compiled path") and offload.objects._compiled._replay (the object layer's records and the
C methods replaying its copy and launch verdicts); everything else lives in pyproject.toml.

The extensions are optional: where they cannot be compiled (no C compiler, no Python headers) the
build goes on without them and the package runs its pure-Python path, which ``OFFLOAD_COMPILED=0``
also selects at run time."""

from setuptools import Extension, setup

FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]


def optional(name: str, sources: list[str], depends: list[str]) -> Extension:
    """One optional C extension (paths below src/offload): skipped where it cannot be built."""
    root = "src/offload/"
    return Extension(
        name, sources=[root + s for s in sources], depends=[root + d for d in depends], extra_compile_args=FLAGS, optional=True
    )


setup(
    ext_modules=[
        optional(
            "offload._compiled._fastpath",
            ["_compiled/_fastpath.c", "_compiled/_fastpath_ops.c", "_compiled/_tracerec.c", "_compiled/_tracefifo.c", "_compiled/_tracelaunch.c", "_compiled/_verdicts.c", "_compiled/_config.c"],
            ["_compiled/_fastpath.h", "_compiled/_tracerec.h", "include/offload_native.h"],
        ),
        optional("offload.objects._compiled._replay", ["objects/_compiled/_replay.c"], ["objects/_compiled/_cmethod.h", "objects/_compiled/_replay.h"]),
    ],
)
