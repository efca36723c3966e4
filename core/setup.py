"""Builds offload-core's optional C extensions, offload._fastpath (the compiled per-call path,
core/DESIGN.md "The compiled path") and offload.objects._launch_memo (the object layer's
remembered launch); everything else lives in pyproject.toml.

The extensions are optional: where they cannot be compiled (no C compiler, no Python headers) the
build goes on without them and the package runs its pure-Python path, which ``OFFLOAD_COMPILED=0``
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
        ),
        Extension(
            "offload.objects._launch_memo",
            sources=["src/offload/objects/_launch_memo.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
            optional=True,
        ),
    ],
)
