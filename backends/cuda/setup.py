"""Builds the optional native entry points (``_native``: without a C compiler the backend serves
through its Python hooks alone), and pins offload-core to the shared VERSION (everything else
lives in pyproject.toml)."""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

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
    """``name==VERSION``; from a checkout (the folder exists, OFFLOAD_PIN_REQUIREMENTS unset) the
    folder itself, so ``pip install ./backends/cuda`` works before anything is published."""
    path = (HERE / folder).resolve()
    if _checkout_install() and (path / "pyproject.toml").is_file():
        return f"{name} @ {path.as_uri()}"
    return f"{name}=={VERSION}"

#: The native entry points, on the bindings' C API (no Cython needed). ``native_include`` links to
#: the core's headers (an sdist carries copies); ``optional``: a failed build leaves the Python hooks.
INCLUDE = "src/offload_cuda/native_include"
NATIVE = Extension("offload_cuda._native", ["src/offload_cuda/_native.c"], include_dirs=[INCLUDE], optional=True,
                   depends=[f"{INCLUDE}/offload_native.h", f"{INCLUDE}/offload_native_gpu.h"],
                   extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"])


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
    ext_modules=[NATIVE],
)
