"""Builds offload-core's optional C extension, offload._fastpath (the compiled per-call path,
core/DESIGN.md "The compiled path"); everything else lives in pyproject.toml.

The extension is optional: where it cannot be compiled (no C compiler, no Python headers) the
build goes on without it and the package runs its pure-Python path, which ``OFFLOAD_COMPILED=0``
also selects at run time."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "offload._fastpath",
            sources=["src/offload/_fastpath.c", "src/offload/_fastpath_ops.c"],
            depends=["src/offload/_fastpath.h", "src/offload/include/offload_native.h"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
            optional=True,
        )
    ],
)
