"""The teardown's time bound (hookspecs: the final ``olShutDown`` of an idle device returns
within ``TEARDOWN_LIMIT_S`` seconds): a child session makes one of each thing the backend can
make, leaves them for the teardown, and times its final ``olShutDown``."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ._child import _PRELUDE, run_script
from ._helpers import Base

#: The most seconds the final ``olShutDown`` may take once the device's work is done (a
#: backend that waits out a timeout there, per queue or per device, exceeds it).
TEARDOWN_LIMIT_S = 5.0

_LEFT_FOR_TEARDOWN = r"""
import time
if os.environ["KIT_QUEUES"] == "1":
    queue = ol.olCreateQueue(device)
    if os.environ["KIT_EVENTS"] == "1":
        ol.olSyncEvent(ol.olCreateEvent(queue))
    ol.olSyncQueue(queue)
if os.environ["KIT_MEMORY"] == "1":
    ol.olMemAlloc(device, ol.AllocType.DEVICE, 4096)
if os.environ.get("KIT_PROGRAM"):
    with open(os.environ["KIT_PROGRAM"], "rb") as f:
        ol.olCreateProgram(device, f.read())
began = time.monotonic()
ol.olShutDown()
result["seconds"] = time.monotonic() - began
print(json.dumps(result), flush=True)
os._exit(0)
"""


class TestTeardown(Base):
    def test_final_shutdown_is_prompt(self, device: Any, capabilities: Any) -> None:
        """A queue, an event, an allocation and a program left to the final ``olShutDown``: it
        releases them all within ``TEARDOWN_LIMIT_S`` seconds."""
        env = {f"KIT_{flag.upper()}": "1" if getattr(capabilities, flag) else "0" for flag in ("queues", "events", "memory")}
        program = capabilities.binary("foo") if capabilities.programs else None
        with tempfile.TemporaryDirectory() as folder:
            if program is not None:
                env["KIT_PROGRAM"] = os.path.join(folder, "foo.bin")
                with open(env["KIT_PROGRAM"], "wb") as f:
                    f.write(bytes(program))
            result = run_script(device, _PRELUDE + _LEFT_FOR_TEARDOWN, {**env, "OFFLOAD_KIT_LEVEL": "r1"})
        assert result["seconds"] <= TEARDOWN_LIMIT_S, (
            f"the final olShutDown took {result['seconds']:.1f} s (the contract allows {TEARDOWN_LIMIT_S:g} s "
            "once the device is idle: does deinit, deinit_device or synchronize(release) wait out a timeout?)"
        )
