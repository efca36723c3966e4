"""The OpenCL backend's tests run where offload-opencl and an OpenCL device (PoCL's CPU device,
installed by scripts/test.sh with ``pyopencl[pocl]``) are present; else they skip, saying why."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_MISSING = Path(__file__).resolve().parents[2] / ".venv" / "opencl-unavailable.txt"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("offload_opencl") is not None:
        return
    why = _MISSING.read_text().strip() if _MISSING.is_file() else "offload-opencl is not installed"
    skip = pytest.mark.skip(reason=f"{why} (scripts/test.sh installs it with pyopencl[pocl])")
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(skip)
