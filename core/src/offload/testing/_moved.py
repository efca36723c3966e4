"""Importing a part of the kit that moved to offload-testing, or saying how to get it."""

from __future__ import annotations

import importlib
from types import ModuleType


def moved(old: str, new: str) -> ModuleType:
    """Module ``new``; an ``ImportError`` naming offload-testing when it is not installed."""
    try:
        return importlib.import_module(new)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != new.split(".")[0]:
            raise
        raise ImportError(
            f"{old} moved to {new}, in the distribution offload-testing, which is not installed: pip install offload-testing",
            name=old,
        ) from exc
