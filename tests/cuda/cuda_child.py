"""Code the CUDA tests run in child processes (preludes of helpers, as source text), the functions
that build it, and a check of the results a child reported."""

from typing import Any

from helpers import ERROR_OF

PRELUDE = r"""
import ctypes, json, os, struct, sys
from pathlib import Path
import offload as ol
""" + ERROR_OF + r"""

KERNELS = Path(os.environ.get("CUDA_TEST_KERNELS", "/nonexistent"))


def image(name, fmt="cubin"):
    data = (KERNELS / f"{name}.{fmt}").read_bytes()
    return data + b"\0" if fmt == "ptx" else data


def platform_devices():
    found = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    out = {}
    for d in found:
        name = ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME)
        out.setdefault(name, []).append(d)
    return out


def u32s(address, count):
    return list((ctypes.c_uint32 * count).from_address(address))


def launch(groups=1, size=64, dyn=0):
    return ol.KernelLaunchSizeArgs(1, (groups, 1, 1), (size, 1, 1), dyn)


def emit(value):
    print(json.dumps(value))
"""

#: Child code (needs `d`, cuda.bindings' driver, and `ck`): `setup(ordinal)` makes the device's
#: primary context current and returns (device, context).
SETUP = r"""
def setup(ordinal=0):
    ck(d.cuInit(0))
    dev = ck(d.cuDeviceGet(ordinal))
    ctx = ck(d.cuDevicePrimaryCtxRetain(dev))
    ck(d.cuCtxSetCurrent(ctx))
    return dev, ctx
"""

DRIVER_PRELUDE = (
    r"""
import cuda.bindings
from cuda.bindings import driver as d
from offload_cuda._driver import adapt
d = adapt(d, cuda.bindings.__version__)  # CUDA 13's names under bindings 12 too (the backend's one map)


def ck(returned):
    err, *rest = returned
    if err:
        raise AssertionError(f"{d.cuGetErrorName(err)[1]}")
    return rest[0] if len(rest) == 1 else rest


def code(returned):
    return int(returned[0])


name = lambda r: d.cuGetErrorName(d.CUresult(r[0] if isinstance(r, tuple) else r))[1].decode()  # an int too (bindings 12 take the enum only)


"""
    + SETUP
    + r"""


def extra_for(buf):
    keep = ctypes.create_string_buffer(bytes(buf), max(1, len(buf)))
    size = ctypes.c_size_t(len(buf))
    arr = (ctypes.c_void_p * 5)(1, ctypes.addressof(keep), 2, ctypes.addressof(size), 0)
    return (keep, size, arr), ctypes.addressof(arr)
"""
)

def offload_child(body: str) -> str:
    """A child of offload calls: ``PRELUDE``, ``olInit`` and the first CUDA device as ``gpu``, then
    ``body``."""
    return PRELUDE + 'ol.olInit()\ngpu = platform_devices()["cuda"][0]\n' + body


def mixed_child(body: str) -> str:
    """A child of offload calls beside raw driver calls: ``PRELUDE``, ``DRIVER_PRELUDE``,
    ``olInit``, the first CUDA device as ``gpu`` and the host device as ``host``, an empty dict
    ``out``, then ``body``."""
    return PRELUDE + DRIVER_PRELUDE + 'ol.olInit()\ngpu = platform_devices()["cuda"][0]\nhost = platform_devices()["host"][0]\nout = {}\n' + body


def driver_child(body: str) -> str:
    """A child of raw driver calls beside offload's prelude: ``PRELUDE``, ``DRIVER_PRELUDE``, then
    ``body``."""
    return PRELUDE + DRIVER_PRELUDE + body


#: Child code of the simulator rule tests: raw cuda.bindings calls only (of offload it imports the
#: backend's map of CUDA 13's names to bindings 12's, ``offload_cuda._driver.adapt``, nothing else):
#: `name`, `ck`, `setup`, `protected` (whether device memory is protected, and why), `host_fn`
#: (a CUhostFn running a Python callable), `fault_kernel` (fault.cubin's module and `fault`) and `emit`.
RAW_PRELUDE = (
    r"""
import ctypes, json, os, sys, threading, time
from pathlib import Path
import cuda.bindings
from cuda.bindings import driver as d
from offload_cuda._driver import adapt
d = adapt(d, cuda.bindings.__version__)

KERNELS = Path(os.environ.get("CUDA_TEST_KERNELS", "/nonexistent"))
name = lambda r: d.cuGetErrorName(d.CUresult(r[0] if isinstance(r, tuple) else r))[1].decode()  # an int too (bindings 12 take the enum only)


def ck(returned):
    err, *rest = returned
    if err:
        raise AssertionError(d.cuGetErrorName(err)[1])
    return rest[0] if len(rest) == 1 else (rest or None)


"""
    + SETUP
    + r"""


def protected():
    why = ctypes.c_char_p()
    fn = ctypes.CDLL("libcuda.so.1").gpusim_memory_protected
    fn.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    return bool(fn(ctypes.byref(why))), why.value.decode()


HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_keep = []


def host_fn(py):
    cb = HOSTFN(lambda _: py())
    _keep.append(cb)
    return d.CUhostFn(ctypes.cast(cb, ctypes.c_void_p).value)


def fault_kernel():
    module = ck(d.cuModuleLoadData((KERNELS / "fault.cubin").read_bytes()))
    return module, ck(d.cuModuleGetFunction(module, b"fault"))


def emit(value):
    print(json.dumps(value), flush=True)
"""
)


def assert_results(out: dict[str, Any], **results: list[str]) -> None:
    """Each key of a child's ``out`` listed under a result name holds that result
    (``assert_results(out, CUDA_SUCCESS=["plain"], CUDA_ERROR_INVALID_VALUE=["twice"])``); a
    difference shows as a diff of the keys and what they held."""
    expected = {key: result for result, keys in results.items() for key in keys}
    assert {key: out.get(key, "<missing>") for key in expected} == expected


def raw_child(body: str) -> str:
    """A child of raw driver calls: ``RAW_PRELUDE``, device 0's primary context made current
    (``dev``, ``ctx``), then ``body``."""
    return RAW_PRELUDE + "dev, ctx = setup()\n" + body


#: Child code (ctypes alone): ``lib``, libcuda.so.1; ``find(name, version)``, what
#: ``cuGetProcAddress_v2`` answers ([result, symbol status, address]); ``address(symbol)``, an
#: exported symbol's address; ``answers(name, version)``, which of the exported ``name`` and
#: ``name_v2`` that lookup answers with (None: neither).
PROC_LOOKUP = r"""
import ctypes, json
lib = ctypes.CDLL("libcuda.so.1")
lookup = lib.cuGetProcAddress_v2
lookup.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
def find(name, version):
    fn, status = ctypes.c_void_p(), ctypes.c_int(-1)
    result = lookup(name.encode(), ctypes.byref(fn), version, 0, ctypes.byref(status))
    return [result, status.value, fn.value or 0]
def address(symbol):
    return ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
def answers(name, version):
    got = find(name, version)[2]
    return next((s for s in (name, name + "_v2") if hasattr(lib, s) and address(s) == got), None)
"""

#: Child code (needs ``d``): ``location(kind, ident)``, a ``CUmemLocation``, and its kinds ``DEV``, ``HOST``.
LOCATIONS = r"""
def location(kind, ident=0):
    loc = d.CUmemLocation()
    loc.type = kind
    loc.id = ident
    return loc
DEV, HOST = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE, d.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
"""
