"""Builds the native part of offload-host (everything else lives in pyproject.toml)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "offload_host._native",
            sources=["src/offload_host/_native.c", "src/offload_host/_hostq.c"],
            depends=["src/offload_host/_native.h", "src/offload_host/include/offload_host.h"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
            libraries=["pthread", "dl"],
        )
    ]
)
