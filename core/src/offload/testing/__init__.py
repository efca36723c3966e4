"""offload.testing: the conformance kit, liboffload's ``offload/unittests/OffloadAPI`` for Python.

A backend author runs the whole suite, every case of liboffload's unit tests that applies to the
Python API, against their backend with one or two small files and pytest. The suite
(``offload_testing.suite``) and its pytest plugin (``offload_testing.plugin``, loaded
automatically through its ``pytest11`` entry point) are the distribution offload-testing
(``pip install offload-testing``), so that installing offload leaves other projects' pytest runs
alone; what a backend declares (``Capabilities``, the registry below) is here, in offload-core.
``offload new-backend mydev`` writes a package laid out like this example, which runs as written
against it (its ``test`` extra installs offload-testing).

1. Describe what the backend can do by subclassing ``Capabilities``. Each optional feature's flag
   (memory, copies, fill, queues, events, host functions, programs, launches, occupancy, ...) is
   derived from the hooks the backend implements, so declare only what the hooks cannot show: a
   flag set False when the hook exists but the device cannot do it, properties that honestly read
   0, and liboffload's test programs built for the device::

       # src/offload_mydev/conformance.py
       from pathlib import Path

       from offload import DeviceInfo
       from offload.testing import Capabilities

       PROGRAMS = Path(__file__).parent / "test_programs"

       class MydevCapabilities(Capabilities):
           zero_info = frozenset({DeviceInfo.VENDOR_ID, DeviceInfo.MAX_CLOCK_FREQUENCY,
                                  DeviceInfo.MEMORY_CLOCK_RATE, DeviceInfo.WORK_GROUP_LOCAL_MEM_SIZE})

           def binary(self, name):  # None: the tests that need program `name` skip
               path = PROGRAMS / f"{name}.mydev.bin"
               return path.read_bytes() if path.exists() else None

   Programs built elsewhere need no ``binary``: ``programs_env = "MYDEV_TEST_PROGRAMS"`` and
   ``programs_suffix = ".bin"`` read ``$MYDEV_TEST_PROGRAMS/<name>.bin`` (as the CUDA and AMDGPU
   backends do).

   An installed backend declares it as an entry point, name = the backend's name::

       [project.entry-points."offload.conformance"]
       mydev = "offload_mydev.conformance:MydevCapabilities"

2. ``conftest.py``, only needed when the backend is not installed or declares its capabilities
   here in place of the entry point::

       # tests/conftest.py
       import offload
       from offload.testing import register_capabilities
       from offload_mydev import MydevBackend
       from offload_mydev.conformance import MydevCapabilities

       offload.register_backend("mydev", MydevBackend)  # only if not installed
       register_capabilities("mydev", MydevCapabilities)  # only without the entry point

3. ``test_conformance.py``::

       # tests/test_conformance.py
       from offload_testing.suite import *  # noqa: F401,F403

Then ``pytest tests``. The tests are parametrised over every device of every platform (ids
``<platform>_<index>``, e.g. ``host_0``); ``OFFLOAD_TEST_PLATFORM=mydev,host`` restricts them to
the named platforms (as liboffload's ``OFFLOAD_UNITTEST_PLATFORM``). A test that needs an optional
feature the capabilities leave off, or a program ``binary()`` does not provide, is skipped with a
reason naming the flag and why it is False (``capabilities.events is False (the backend does not
implement create_event, ...)``); ``TestAbsentFeatures`` then checks that each absent feature
answers ``OL_ERRC_UNSUPPORTED``, and ``TestCapabilities`` that no flag declared True lacks its
hooks. Every result is checked through the API: DEVICE memory, written and read back with
``olMemcpy`` to and from host memory (the plugin's ``device_memory``), so a device whose memory
the host cannot touch runs every result check; MANAGED and HOST memory only add the cases that
test host access to them. Host memory is memory of the first device whose platform backend is
HOST (the host backend's CPU device); tests that copy to or from host memory skip without one.

When pytest plugin autoloading is disabled (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), add
``pytest_plugins = ["offload_testing.plugin"]`` to the conftest. ``offload.testing.suite`` and
``offload.testing.plugin``, where the two lived before, still import (with a
``DeprecationWarning``) while offload-testing is installed.

Test programs (liboffload's ``device_code/``; ``offload-host``'s ``kernels/*.c`` are the reference
versions): ``foo`` (``foo(uint32_t *out)``: ``out[id] = id``), ``bar`` (a kernel also named ``foo``:
``out[id] = id + 1``), ``noargs``, ``byte`` (one ``unsigned char``), ``multiargs`` (``char, int *,
short``), ``localmem`` / ``localmem_reduction`` (dynamic local memory), ``localmem_static``,
``global`` (``uint32_t global[64]``, kernels ``write``/``read``), ``global_ctor`` (``i + 100``),
``global_dtor`` (a destructor; with ``dtor_out`` it also exports ``uint32_t *dtor_out`` and writes
64 ones there at unload), ``sequence`` (``sequence(uint32_t idx, uint32_t *inout)``: one Fibonacci
step), ``single_counter`` (``single_counter(int32_t loops, int32_t addend, uint32_t *init,
uint32_t *out)``). Kernel arguments are passed as the C struct of the parameters, laid out as
the C compiler lays it out (natural alignment).
"""

from __future__ import annotations

import threading
from typing import Any

from .._core.registry import registered_backend
from ._capabilities import FEATURES, Capabilities, Feature

__all__ = [
    "CONFORMANCE_ENTRY_POINT_GROUP",
    "FEATURES",
    "TEST_PROGRAMS",
    "Capabilities",
    "Feature",
    "capabilities_for",
    "register_capabilities",
    "registered_backend",  # what offload.register_backend registered in-process: the kit re-registers it in a child
    "unregister_capabilities",
]

#: Entry-point group mapping a backend name to its ``Capabilities`` subclass.
CONFORMANCE_ENTRY_POINT_GROUP = "offload.conformance"

#: The liboffload test programs the suite asks ``Capabilities.binary`` for.
TEST_PROGRAMS: tuple[str, ...] = (
    "foo",
    "bar",
    "noargs",
    "byte",
    "multiargs",
    "localmem",
    "localmem_reduction",
    "localmem_static",
    "global",
    "global_ctor",
    "global_dtor",
    "sequence",
    "single_counter",
)


_registered: dict[str, type[Capabilities] | Capabilities] = {}
_instances: dict[str, Capabilities] = {}
_lock = threading.Lock()


def register_capabilities(backend: str, capabilities: type[Capabilities] | Capabilities) -> None:
    """Declare the capabilities of backend (platform) ``backend``; wins over the entry point."""
    if not isinstance(backend, str) or not backend:
        raise ValueError(f"backend must be a non-empty str, got {backend!r}")
    is_class = isinstance(capabilities, type) and issubclass(capabilities, Capabilities)
    if not (is_class or isinstance(capabilities, Capabilities)):
        raise TypeError(f"capabilities must be a Capabilities subclass or instance, got {capabilities!r}")
    with _lock:
        _registered[backend] = capabilities
        _instances.pop(backend, None)


def unregister_capabilities(backend: str) -> None:
    """Forget a ``register_capabilities`` declaration (KeyError if there is none)."""
    with _lock:
        del _registered[backend]
        _instances.pop(backend, None)


def _from_entry_point(backend: str) -> Any:
    from importlib.metadata import entry_points  # here: ~25 ms to import, paid only when a backend is looked up

    for ep in entry_points(group=CONFORMANCE_ENTRY_POINT_GROUP):
        if ep.name == backend:
            return ep.load()
    return None


def capabilities_for(backend: str) -> Capabilities:
    """The ``Capabilities`` of backend ``backend``: registered, else its entry point, else defaults.

    One instance per backend name is made and reused.
    """
    with _lock:
        found = _instances.get(backend)
        if found is not None:
            return found
        declared: Any = _registered.get(backend)
    if declared is None:
        declared = _from_entry_point(backend)
    if declared is None:
        declared = Capabilities
    instance = declared() if isinstance(declared, type) else declared
    if not isinstance(instance, Capabilities):
        raise TypeError(f"the conformance capabilities of {backend!r} are not a Capabilities: {instance!r}")
    with _lock:
        return _instances.setdefault(backend, instance)
