"""offload.objects: the Pythonic layer over the flat ``ol*`` API.

Devices, contexts, buffers, typed arrays, queues, events, programs and kernels as objects with
context managers and garbage collection; numpy and DLPack in and out; kernels that pack their own
arguments. The layer holds one ``olInit`` reference of its own (taken when the first object is
made, dropped at exit), so it can be mixed freely with the flat API: every object exposes its flat
handle as ``.handle`` and buffers their address as ``__offload_ptr__``.

The most used names are also in ``offload`` itself: ``offload.devices()``, ``offload.Buffer``,
``offload.Array``, ``offload.to_device``, ... The classes that share a name with a flat handle
(``Device``, ``Platform``, ``Context``, ``Queue``, ``Event``, ``Program``) live here only: the flat
handle types are ``offload.QueueHandle``, ``offload.DeviceHandle``, ... (``offload.Queue`` is a
deprecated spelling of ``offload.QueueHandle``), and ``isinstance(dev.queue().handle,
offload.QueueHandle)`` is True.
"""

from __future__ import annotations

from ._array import Array
from ._creation import empty, empty_like, full, full_like, ones, ones_like, to_device, zeros, zeros_like
from ._buffer import Buffer
from ._context import Context
from ._cai import as_array, from_cuda_array_interface, from_dlpack
from ._discovery import Device, InfoMapping, Platform, default_device, devices, platforms
from ._mpi import host_staging, mpi_buffer
from ._program import Kernel, Program
from ._queue import Event, Queue

for _public in (Array, Buffer, Context, Device, Event, InfoMapping, Kernel, Platform, Program, Queue):
    _public.__module__ = __name__  # help() and reprs name offload.objects, not the private module
del _public

__all__ = [
    "Array",
    "Buffer",
    "as_array",
    "Context",
    "from_cuda_array_interface",
    "Device",
    "Event",
    "InfoMapping",
    "Kernel",
    "Platform",
    "Program",
    "Queue",
    "default_device",
    "devices",
    "empty",
    "empty_like",
    "from_dlpack",
    "full",
    "full_like",
    "host_staging",
    "mpi_buffer",
    "ones",
    "ones_like",
    "platforms",
    "to_device",
    "zeros",
    "zeros_like",
]
