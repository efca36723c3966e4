"""Child processes of the conformance suite (not tests): cases that need a session of their own.

The suite's tests run inside the plugin's one ``olInit`` (API level ``r1``, validation as the
environment says). A case that needs API level ``main``, validation off, or a final
``olShutDown`` runs in a child Python process that loads only the backend of the device under
test; the child prints one JSON line, which the test reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any

import pytest

from offload.testing import registered_backend

#: Run first in a ``run_on_device`` child: a session at ``OFFLOAD_KIT_LEVEL`` with only the
#: device's backend; ``device`` is the device under test, ``host_device`` the first device of a
#: HOST platform (None without one), ``outcome(fn, *args)`` names the error
#: code of a call ("SUCCESS" when it returns), ``result`` is the dict printed as JSON at the end.
_PRELUDE = r"""
import json, os
import offload as ol
ol.olInit(ol.InitArgs(platforms=(os.environ["OFFLOAD_KIT_PLATFORM"],), api_level=os.environ["OFFLOAD_KIT_LEVEL"]))
_found = []
ol.olIterateDevices(lambda d, _: _found.append(d) or True, None)
_name = os.environ["OFFLOAD_KIT_PLATFORM"]
device = [d for d in _found if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME) == _name][int(os.environ["OFFLOAD_KIT_INDEX"])]
_hosts = [d for d in _found if ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST]
host_device = _hosts[0] if _hosts else None
result = {}
def outcome(fn, *args):
    try:
        fn(*args)
    except ol.OffloadError as exc:
        return exc.code.name
    return "SUCCESS"
"""

#: Last: the session ends, the result is printed, and the process leaves without running the
#: interpreter's and drivers' exit-time teardown, which is not what these cases test (PoCL's
#: pthread device can abort in its static destructors: "terminate called without an active
#: exception", after everything here has succeeded).
_EPILOGUE = r"""
ol.olShutDown()
print(json.dumps(result), flush=True)
os._exit(0)
"""


#: Run before any script: a backend the parent registered in-process (``register_backend``) is
#: registered again in the child, from the importable object ``OFFLOAD_KIT_REGISTER`` names.
_REGISTER = r"""
import os as _os
if _os.environ.get("OFFLOAD_KIT_REGISTER"):
    import importlib as _importlib, offload as _offload
    _module, _qualname = _os.environ["OFFLOAD_KIT_REGISTER"].split(":")
    _object = _importlib.import_module(_module)
    for _part in _qualname.split("."):
        _object = getattr(_object, _part)
    _offload.register_backend(_os.environ["OFFLOAD_KIT_PLATFORM"], _object)
"""


def _registration(name: str) -> str:
    """"module:qualname" of the backend registered in-process as ``name``, "" for an installed
    one (its entry point loads it in the child); skips when the child could not import it."""
    if any(ep.name == name for ep in entry_points(group="offload.backends")):
        return ""
    registered = registered_backend(name)
    module, qualname = getattr(registered, "__module__", None), getattr(registered, "__qualname__", "")
    if registered is None or module in (None, "__main__") or "<locals>" in qualname:
        pytest.skip(f"backend {name!r} is registered in-process from an object a child process cannot import")
    return f"{module}:{qualname}"


def run_script(device: Any, source: str, env: dict[str, str] | None = None) -> Any:
    """Run ``source`` in a child Python process and return the JSON of its last output line.

    The child's environment names the device under test (``OFFLOAD_KIT_PLATFORM``: its platform's
    name, ``OFFLOAD_KIT_INDEX``: its index there) plus ``env``; a backend registered in-process is
    registered in the child too (skips when its object cannot be imported there). The test fails
    when the child fails."""
    name = device.platform.name
    child_env = {
        **os.environ,
        **(env or {}),
        "OFFLOAD_KIT_PLATFORM": name,
        "OFFLOAD_KIT_INDEX": str(device.index),
        "OFFLOAD_KIT_REGISTER": _registration(name),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _REGISTER + source], capture_output=True, text=True, env=child_env, timeout=120
    )
    assert proc.returncode == 0, f"the child failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_on_device(device: Any, body: str, level: str = "r1", env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``body`` in a child session at API ``level`` on the device under test (see ``_PRELUDE``
    for the names ``body`` finds) and return its ``result``."""
    result: dict[str, Any] = run_script(device, _PRELUDE + body + _EPILOGUE, {**(env or {}), "OFFLOAD_KIT_LEVEL": level})
    return result
