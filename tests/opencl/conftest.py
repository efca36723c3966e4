"""The OpenCL backend's tests run where offload-opencl and an OpenCL device (PoCL's CPU device,
installed by scripts/test.sh with ``pyopencl[pocl]``) are present; else they skip, saying why.
Tests that build a program ask for the ``compiler`` fixture: they skip, naming the CPU and the
PoCL, where that PoCL cannot compile for this CPU (``pocl_compiler``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pocl_compiler import cannot_compile

_MISSING = Path(__file__).resolve().parents[2] / ".venv" / "opencl-unavailable.txt"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("offload_opencl") is not None:
        return
    why = _MISSING.read_text().strip() if _MISSING.is_file() else "offload-opencl is not installed"
    skip = pytest.mark.skip(reason=f"{why} (scripts/test.sh installs it with pyopencl[pocl])")
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(skip)


@pytest.fixture
def compiler() -> None:
    """Skips the test, saying why, where an OpenCL device here cannot compile OpenCL C."""
    why = cannot_compile()
    if why is not None:
        pytest.skip(why)
