"""Pins offload-core to the shared VERSION (everything else lives in pyproject.toml)."""

import os
import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
VERSION = (HERE / "VERSION").read_text().strip()


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
    """``name==VERSION``; from a checkout (pip installing the folder) the folder itself, so
    ``pip install ./backends/opencl`` works before anything is published."""
    path = (HERE / folder).resolve()
    if _checkout_install() and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.as_uri()}"
    return f"{name}=={VERSION}"


setup(install_requires=[requirement("offload-core", "../../core"), requirement("offload-host", "../host")])  # the server runs offload-host
