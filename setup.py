"""The user-facing distribution ``offload``: offload-core and offload-host, numpy (the object layer's
arrays, the examples and the README need it; offload-core itself stays numpy-free), and an extra per
GPU backend (``offload[cuda]``, ``offload[amdgpu]``), and ``offload[plot]`` (offload-core's ``plot``
extra: matplotlib, for ``offload trace plot``). It holds no code, only requirements.

The version is ``VERSION`` (a link to ``core/src/offload/VERSION``, the one place). From a checkout
each requirement is the folder itself (``offload-core @ file:///…/core``) while pip installs it, so ``pip install .``
installs everything from the checkout; an sdist, a wheel of another front end (``python -m build``)
or ``OFFLOAD_PIN_REQUIREMENTS=1`` pins ``==VERSION`` for an index or a wheelhouse
(``scripts/wheelhouse.sh``) instead.
"""

import os
import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
VERSION = (HERE / "VERSION").read_text().strip()
# extras named even without their backend folder (a wheel built from the sdist has none)
EXTRA_BACKENDS = ("cuda", "amdgpu", "opencl", "remote")



def _checkout_install() -> bool:
    """Whether pip is installing this folder of a checkout (pip sets ``PIP_BUILD_TRACKER``, older pips
    ``PIP_REQ_TRACKER``, while it builds): only then are our other distributions required as file
    URLs of their folders. An sdist, any other front end (``python -m build``, whose wheels are
    built from the sdist or pinned the same) and ``OFFLOAD_PIN_REQUIREMENTS=1`` pin ``==VERSION``,
    so nothing meant for an index carries a file URL."""
    if os.environ.get("OFFLOAD_PIN_REQUIREMENTS") == "1" or "sdist" in sys.argv:
        return False
    return "PIP_BUILD_TRACKER" in os.environ or "PIP_REQ_TRACKER" in os.environ

def requirement(name: str, folder: str, extra: str = "") -> str:
    path = HERE / folder
    name = f"{name}[{extra}]" if extra else name
    if _checkout_install() and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.resolve().as_uri()}"
    return f"{name}=={VERSION}"


def backend_names() -> list[str]:
    found = {p.parent.name for p in (HERE / "backends").glob("*/pyproject.toml")} - {"host"}
    return sorted(found | set(EXTRA_BACKENDS))


NUMPY = "numpy>=1.26"  # offload.Array, DLPack and the examples; tests/requirements.txt asks the same

setup(
    install_requires=[requirement("offload-core", "core"), requirement("offload-host", "backends/host"), NUMPY],
    extras_require={
        **{name: [requirement(f"offload-{name}", f"backends/{name}")] for name in backend_names()},
        "test": [requirement("offload-testing", "testing")],  # the conformance kit (pulls pytest)
        "plot": [requirement("offload-core", "core", "plot")],  # matplotlib, for `offload trace plot`
    },
)
