"""Builds the optional native entry points (``_native``: without a C compiler the backend serves
through its Python hooks alone), and pins offload-core to the shared VERSION (everything else
lives in pyproject.toml)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _offload_setup.py: a link to the checkout root's
from _offload_setup import gpu_native, requirement  # noqa: E402  (an sdist carries a copy)
from setuptools import setup  # noqa: E402

#: cuda.bindings 12.9.3 is the oldest 12.x release that serves: 12.8.0 and 12.9.0 have every call the
#: backend makes but hold the GIL in blocking calls (cuStreamSynchronize), which deadlocks Python
#: host functions (``_driver`` refuses them); with 12.9.1 and 12.9.2 a process that also uses cuda.core
#: 1.2.2 crashes at exit (its context handles are released after Python's finalisation, through
#: cydriver wrappers that take the GIL); 13.0.0 and 13.0.1 do the same, so 13.x starts at 13.0.2.
#: Measured on the simulator; 12.6.x, the first with ``cuda.bindings.driver``, is not on the index
#: this was verified on. Bindings 13 need a CUDA 13.0 driver (R580); a 12.x driver (R550-R575) needs ``[cu12]``.
#: The extras are named as cuda-core names them (``cu12``, ``cu13``); ``_driver`` maps the majors'
#: differences. ``nvrtc`` (NVRTC 13) pairs with ``cu13``, ``nvrtc-cu12`` (NVRTC 12) with ``cu12``.
BINDINGS = "cuda-bindings>=12.9.3,!=13.0.0,!=13.0.1,<14"
EXTRAS = {
    "cu12": ["cuda-bindings>=12.9.3,<13"],
    "cu13": ["cuda-bindings>=13.0.2,<14"],
    "nvrtc": ["nvidia-cuda-nvrtc>=13.0,<14"],  # offload.build in-process where no toolkit is installed
    "nvrtc-cu12": ["nvidia-cuda-nvrtc-cu12>=12.9,<13"],
}

setup(
    install_requires=[requirement("offload-core", "../../core"), BINDINGS],
    extras_require=EXTRAS,
    ext_modules=[gpu_native("offload_cuda")],
)
