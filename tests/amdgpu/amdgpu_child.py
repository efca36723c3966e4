"""Code the AMDGPU tests run in child processes (source text), and the functions that build it."""

from typing import Any


def programs_prelude(build: Any, prelude: str) -> str:
    """``prelude`` after the line naming the folders of the built test programs: ``PROGRAMS`` (for
    the simulator's target) and ``OTHER`` (for another gfx target)."""
    return f"PROGRAMS, OTHER = {str(build.programs)!r}, {str(build.other)!r}\n" + prelude

#: Child code (needs `ol`): olInit, then `devs` every device, `amd` the AMDGPU ones, `host` the
#: host device and `dev` the first AMDGPU device.
DEVICES = """
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
amd = [d for d in devs if d.platform.kind is ol.PlatformBackend.AMDGPU]
host = next(d for d in devs if d.platform.kind is ol.PlatformBackend.HOST)
dev = amd[0]
"""

#: Child code of the HIP simulator's rule tests, raw hip-python calls only: ``hip``, ``st(result)``
#: (a call's hipError_t as an int), ``HOST_FN`` and ``launch_host_func(stream, fn)``, and
#: ``load_kernel(name)`` (module and function of test program ``name``, on the current device).
RAW_PRELUDE = """
import ctypes, threading
from hip import hip
def st(result):
    return int(result[0])
HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def launch_host_func(stream, fn):
    address = ctypes.cast(fn, ctypes.c_void_p).value
    return st(hip.hipLaunchHostFunc(stream, address, None))
def load_kernel(name):  # (module, function) of test program `name`'s kernel `name`, on the current device
    import os
    image = open(os.path.join(os.environ["OFFLOAD_AMDGPU_PROGRAMS"], name + ".hsaco"), "rb").read()
    module = hip.hipModuleLoadData(image)[1]
    return module, hip.hipModuleGetFunction(module, name.encode())[1]
"""
