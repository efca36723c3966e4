"""The user-facing distribution ``offload``: offload-core and offload-host, numpy (the object layer's
arrays, the examples and the README need it; offload-core itself stays numpy-free), and an extra per
GPU backend (``offload[cuda]``, ``offload[amdgpu]``), and ``offload[plot]`` (offload-core's ``plot``
extra: matplotlib, for ``offload trace plot``). It holds no code, only requirements.

The version is ``VERSION`` (a link to ``core/src/offload/VERSION``, the one place). From a checkout
each requirement is the folder itself (``offload-core @ file:///…/core``) while pip installs it, so ``pip install .``
installs everything from the checkout; an sdist, a wheel of another front end (``python -m build``)
or ``OFFLOAD_PIN_REQUIREMENTS=1`` pins ``==VERSION`` for an index or a wheelhouse
(``scripts/wheelhouse.sh``) instead: ``_offload_setup.py``, which every distribution's setup.py shares.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _offload_setup.py, which every distribution's setup.py shares
from _offload_setup import requirement  # noqa: E402  (an sdist carries a copy)
from setuptools import setup  # noqa: E402

# extras named even without their backend folder (a wheel built from the sdist has none)
EXTRA_BACKENDS = ("cuda", "amdgpu", "opencl", "remote")


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
