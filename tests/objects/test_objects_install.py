"""The user-facing ``offload`` distribution installs numpy (the object layer needs it); offload-core
stays numpy-free (its own tests run in a venv without numpy: tests/core_only)."""

from __future__ import annotations

import importlib.metadata
import re


def _names(dist: str) -> set[str]:
    requires = importlib.metadata.requires(dist) or []
    return {re.split(r"[ ;<>=!~\[@(]", r, maxsplit=1)[0].lower() for r in requires if "extra ==" not in r}


def test_the_root_distribution_requires_numpy_and_the_core_does_not() -> None:
    assert "numpy" in _names("offload")
    assert "numpy" not in _names("offload-core")
