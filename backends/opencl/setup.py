"""Pins offload-core to the shared VERSION (everything else lives in pyproject.toml)."""

import os
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
VERSION = (HERE / "VERSION").read_text().strip()


def requirement(name: str, folder: str) -> str:
    """``name==VERSION``; from a checkout (the folder exists, OFFLOAD_PIN_REQUIREMENTS unset) the
    folder itself, so ``pip install ./backends/opencl`` works before anything is published."""
    path = (HERE / folder).resolve()
    if os.environ.get("OFFLOAD_PIN_REQUIREMENTS") != "1" and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.as_uri()}"
    return f"{name}=={VERSION}"


setup(install_requires=[requirement("offload-core", "../../core"), "pyopencl>=2024.1"])
