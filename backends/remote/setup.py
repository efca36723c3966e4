"""Pins offload-core and offload-host (the server runs it) to the shared VERSION (everything else
lives in pyproject.toml)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _offload_setup.py: a link to the checkout root's
from _offload_setup import requirement  # noqa: E402  (an sdist carries a copy)
from setuptools import setup  # noqa: E402

setup(install_requires=[requirement("offload-core", "../../core"), requirement("offload-host", "../host")])
