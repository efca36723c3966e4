"""Builds the native part of offload-host (everything else lives in pyproject.toml)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "offload_host._native",
            sources=["src/offload_host/_native.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
            libraries=["pthread", "dl"],
        )
    ]
)
