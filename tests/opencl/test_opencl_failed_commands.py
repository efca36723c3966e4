"""A command that fails on the device after it was enqueued: its error reaches the queue's next sync.

OpenCL reports such a failure only in the command's event (a negative execution status;
``clFinish`` still succeeds), so the backend must read it (``_queue.wait``). The failure here is
one PoCL really produces: a command behind an event that failed is terminated with a negative
status (OpenCL 3.0, ``clSetUserEventStatus``: "A negative integer value causes all enqueued
commands that wait on this user event to be terminated"; in an in-order queue every later command
waits on the earlier ones). The failed event is another library's command on the same
``cl_command_queue`` (a barrier behind a user event it fails), and the commands that fail with it
are offload's own copies. Run in a child process: Debian's PoCL 3.1 aborts the process when a
command fails after its event was released (the backend keeps them; a regression would crash).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_ABSENT = "offload-opencl or pyopencl is not installed (scripts/test.sh says why, in .venv/opencl-unavailable.txt)"
pytest.importorskip("pyopencl", reason=_ABSENT)
pytest.importorskip("offload_opencl", reason=_ABSENT)

_CHILD = r"""
import ctypes, gc, json, sys
import pyopencl as cl
import offload as ol
CL_OUT_OF_RESOURCES = -5
behind = int(sys.argv[1])
ol.olInit()
found = []
ol.olIterateDevices(lambda d, _: found.append(d) or True)
kind = lambda d: ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME)
gpu = next(d for d in found if kind(d) == "opencl")
host = next(d for d in found if kind(d) == "host")
queue = ol.olCreateQueue(gpu)
dev = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
source = (ctypes.c_uint8 * 64)(*range(64))
back = (ctypes.c_uint8 * 64)()
backend_queue = queue.native  # offload_opencl's OpenCLQueue
gate = cl.UserEvent(backend_queue.device.context)
barrier = cl.enqueue_barrier(backend_queue.cl_queue, wait_for=[gate])  # another library's command, its event kept
for _ in range(behind):  # offload's commands behind it
    ol.olMemcpy(queue, dev, gpu, ctypes.addressof(source), host, 64)
copy = backend_queue.last
gc.collect()
gate.set_status(CL_OUT_OF_RESOURCES)
out = {"barrier": barrier.command_execution_status}
try:
    ol.olSyncQueue(queue)
    out["sync"] = None
except ol.OffloadError as exc:
    out["sync"] = [exc.code.name, exc.details]
out["copy"] = copy.command_execution_status
# the error was reported once; the queue serves again
ol.olMemcpy(queue, dev, gpu, ctypes.addressof(source), host, 64)
ol.olMemcpy(queue, ctypes.addressof(back), host, dev, gpu, 64)
out["again"] = ol.olSyncQueue(queue)
out["data"] = list(back) == list(range(64))
ol.olMemFree(dev)
ol.olDestroyQueue(queue)
ol.olShutDown()
print(json.dumps(out))
"""


@pytest.mark.parametrize("behind", [1, 3])
def test_a_command_failing_after_its_enqueue_fails_the_next_sync(behind: int) -> None:
    """``behind`` offload copies behind the failed command: they fail with it (the last one's event
    shows it), the next olSyncQueue raises BACKEND_FAILURE naming the OpenCL status, once, and the
    queue then serves again."""
    env = {**os.environ, "OFFLOAD_BACKENDS": "opencl,host"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(behind)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["barrier"] < 0 and out["copy"] < 0, out  # offload's copies failed too, asynchronously
    code, details = out["sync"]
    assert code == "BACKEND_FAILURE" and "failed with OpenCL status" in details, out
    assert out["again"] is None and out["data"] is True, out
