"""A command that fails on the device after it was enqueued: its error reaches the queue's next sync.

OpenCL reports such a failure only in the command's event (a negative execution status;
``clFinish`` still succeeds), so the backend must read it (``_queue.wait``). The failure here is
one PoCL really produces: a command behind an event that failed is terminated with a negative
status (OpenCL 3.0, ``clSetUserEventStatus``: "A negative integer value causes all enqueued
commands that wait on this user event to be terminated"; in an in-order queue every later command
waits on the earlier ones). The failed event is another library's command on the same
``cl_command_queue`` (a barrier behind a user event it fails), and the command that fails with it
is offload's own copy.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import pytest

import offload as ol

from helpers import devices

_ABSENT = "offload-opencl or pyopencl is not installed (scripts/test.sh says why, in .venv/opencl-unavailable.txt)"
cl = pytest.importorskip("pyopencl", reason=_ABSENT)
pytest.importorskip("offload_opencl", reason=_ABSENT)

_CL_OUT_OF_RESOURCES = -5


@pytest.fixture
def opencl(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ol.Device, ol.Device]]:
    """The first OpenCL device and the host device."""
    monkeypatch.setenv("OFFLOAD_BACKENDS", "opencl,host")
    ol.olInit()
    try:
        found = {ol.olGetPlatformInfo(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.NAME): d for d in reversed(devices())}
        assert "opencl" in found, f"no OpenCL device: {[(s.name, s.note, s.reason) for s in ol.backend_status()]}"
        yield found["opencl"], found["host"]
    finally:
        ol.olShutDown()


def test_a_command_failing_after_its_enqueue_fails_the_next_sync(opencl: tuple[ol.Device, ol.Device]) -> None:
    gpu, host = opencl
    queue = ol.olCreateQueue(gpu)
    dev = ol.olMemAlloc(gpu, ol.AllocType.DEVICE, 64)
    source = (ctypes.c_uint8 * 64)(*range(64))
    back = (ctypes.c_uint8 * 64)()
    try:
        backend_queue: Any = queue.native  # offload_opencl's OpenCLQueue
        gate = cl.UserEvent(backend_queue.device.context)
        # another library's command; its event is kept until the end (PoCL 3.1 aborts when an event
        # fails after its last release: "PTHREAD ERROR in pocl_update_event_failed()")
        barrier = cl.enqueue_barrier(backend_queue.cl_queue, wait_for=[gate])
        ol.olMemcpy(queue, dev, gpu, ctypes.addressof(source), host, 64)  # offload's, behind it
        copy = backend_queue.last
        gate.set_status(_CL_OUT_OF_RESOURCES)
        with pytest.raises(ol.OffloadError) as info:
            ol.olSyncQueue(queue)
        assert barrier.command_execution_status < 0 and copy.command_execution_status < 0  # offload's copy failed too
        assert info.value.code is ol.ErrorCode.BACKEND_FAILURE, info.value
        assert "failed with OpenCL status" in info.value.details, info.value
        # the error was reported once; the queue serves again
        ol.olMemcpy(queue, dev, gpu, ctypes.addressof(source), host, 64)
        ol.olMemcpy(queue, ctypes.addressof(back), host, dev, gpu, 64)
        ol.olSyncQueue(queue)
        assert list(back) == list(range(64))
    finally:
        ol.olMemFree(dev)
        ol.olDestroyQueue(queue)
