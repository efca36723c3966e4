"""OpenCL devices with shared virtual memory: discovery through the ICD loader (``discover``, no
PyOpenCL import), one context per OpenCL platform made on first use, and the device's properties
as liboffload's ``DeviceInfo`` (``info``)."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from typing import Any

from offload import DeviceInfo

from . import _cl as cl
from ._errors import driver, status_error
from ._icd import (
    DEVICE_IL_VERSION, DEVICE_NAME, DEVICE_SVM_CAPABILITIES, PLATFORM_NAME, PLATFORM_VENDOR, PLATFORM_VERSION,
    IcdError, Loader, LoaderUnavailable,
)  # fmt: skip
from ._info import device_info

__all__ = ["OpenCLDevice", "OpenCLPlatform", "discover"]

#: cl_device_svm_capabilities bits (CL/cl.h)
SVM_COARSE_GRAIN_BUFFER = 1 << 0
SVM_FINE_GRAIN_BUFFER = 1 << 1
#: OpenCLDevice's PyOpenCL objects, made together on first use
_MADE_ON_FIRST_USE = frozenset({"device", "context", "sync_queue"})


class OpenCLPlatform:
    """One OpenCL platform as discovery read it (``handle``: its ``cl_platform_id``), and the
    PyOpenCL context of its usable devices, made once on first use (``context``)."""

    def __init__(self, loader: Loader, handle: int, device_handles: list[int]) -> None:
        self.handle = handle
        self.name = loader.platform_text(handle, PLATFORM_NAME)
        self.vendor = loader.platform_text(handle, PLATFORM_VENDOR)
        self.version = loader.platform_text(handle, PLATFORM_VERSION)
        self.device_handles = device_handles
        self._lock = threading.Lock()
        self._made: tuple[cl.Context, dict[int, cl.Device]] | None = None

    def context(self) -> tuple[cl.Context, dict[int, cl.Device]]:
        """The context of the platform's usable devices and those devices (by ``cl_device_id``)."""
        with self._lock:
            if self._made is None:
                with driver(f"clCreateContext on OpenCL platform {self.name.strip()}"):
                    devices = {h: cl.Device.from_int_ptr(h) for h in self.device_handles}
                    self._made = (cl.Context(list(devices.values())), devices)
            return self._made


class OpenCLDevice:
    """One OpenCL device with coarse-grained buffer SVM. Discovery gives its ``cl_device_id``
    (``handle``), name and SVM capabilities; its PyOpenCL objects (``device``, its platform's
    ``context``, ``sync_queue`` for synchronous work) are made together, once, by the first
    read of any of them. ``allocations``: the live SVM allocations (address -> ``SVMAllocation``)."""

    device: cl.Device
    context: cl.Context
    sync_queue: cl.CommandQueue

    def __init__(self, loader: Loader, platform: OpenCLPlatform, handle: int, name: str, svm: int, ordinal: int) -> None:
        self.loader = loader
        self.platform = platform
        self.handle = handle
        self.name = name.strip()
        self.ordinal = ordinal
        self.fine_grained = bool(svm & SVM_FINE_GRAIN_BUFFER)
        try:
            il_version = loader.device_text(handle, DEVICE_IL_VERSION)
        except IcdError:  # CL_INVALID_VALUE: an OpenCL 2.0 device, which takes no IL
            il_version = ""
        self.takes_il = "SPIR-V" in il_version
        self.allocations: dict[int, cl.SVMAllocation] = {}
        self.lock = threading.Lock()
        self._make_lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name not in _MADE_ON_FIRST_USE:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        self._make()
        return self.__dict__[name]

    def _make(self) -> None:
        with self._make_lock:
            if "sync_queue" in self.__dict__:
                return
            context, devices = self.platform.context()
            device = devices[self.handle]
            with driver(f"clCreateCommandQueue on {self!r}"):
                queue = cl.CommandQueue(context, device)
            self.__dict__.update(device=device, context=context, sync_queue=queue)

    def finish(self) -> None:
        """Wait for the synchronous queue's work (nothing to wait for where it was never made)."""
        queue = self.__dict__.get("sync_queue")
        if queue is not None:
            with driver(f"clFinish on {self!r}"):
                queue.finish()

    def __repr__(self) -> str:
        return f"<OpenCL device {self.ordinal}: {self.name} ({self.platform.name})>"

    def info(self) -> Mapping[DeviceInfo, Any]:
        uid = f"{self.platform.name.strip()}/{self.name}/{self.ordinal}"
        try:
            return device_info(self.loader, self.handle, uid)
        except IcdError as exc:
            raise status_error(f"device info of {self!r}: {exc}", exc.status) from exc


def _no_svm(name: str, platform: OpenCLPlatform) -> str:
    return (
        f"{name.strip()} ({platform.name.strip()}): no shared virtual memory "
        "(OpenCL 2.0 coarse-grained buffer SVM), which offload's void* addresses need"
    )


def discover() -> tuple[list[OpenCLDevice], list[str]]:
    """Every device with coarse-grained buffer SVM on every OpenCL platform, read through the ICD
    loader PyOpenCL links to (PyOpenCL is not imported), and a sentence for each device or
    platform left out (no loader or no platform: one sentence saying so)."""
    devices: list[OpenCLDevice] = []
    skipped: list[str] = []
    try:
        loader = Loader.open()
    except LoaderUnavailable as exc:
        return [], [f"no OpenCL platform ({exc})"]
    try:
        platforms = loader.platforms()
    except IcdError as exc:  # CL_PLATFORM_NOT_FOUND_KHR: a loader without drivers
        return [], [f"no OpenCL platform ({loader.no_platform_reason(exc)})"]
    for handle in platforms:
        try:
            platform = OpenCLPlatform(loader, handle, [])
            found = [(d, loader.device_text(d, DEVICE_NAME)) for d in loader.devices(handle)]
        except IcdError as exc:
            skipped.append(f"OpenCL platform {handle:#x}: {exc}")
            continue
        for device, name in found:
            try:
                svm = loader.device_value(device, DEVICE_SVM_CAPABILITIES, ctypes.c_uint64)
            except IcdError:  # CL_INVALID_VALUE: an OpenCL 1.x device knows no SVM
                svm = 0
            if svm & SVM_COARSE_GRAIN_BUFFER:
                platform.device_handles.append(device)
                devices.append(OpenCLDevice(loader, platform, device, name, svm, len(devices)))
            else:
                skipped.append(_no_svm(name, platform))
    return devices, skipped
