"""The contract's lifecycle hooks: starting and ending a backend, its devices and their properties
(``offload.hookspecs`` re-exports them; its docstring states the obligations)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .._values.enums import DeviceInfo, PlatformInfo
from .._values.opaque import NativeDevice
from ._markers import hookspec


# --- lifecycle -----------------------------------------------------------------------------


@hookspec
def init() -> Sequence[NativeDevice]:
    """Initialise the driver and return one opaque ``device`` object per usable device.

    Returning no devices is fine (no hardware): the platform then shows zero devices. Raise when
    the driver is present but broken; the backend is then skipped with that reason.
    """


@hookspec
def served_hooks() -> Collection[str] | None:
    """The optional hooks this backend serves, given what ``init`` found; asked once, right after
    it. A backend whose features depend on the device (a driver with optional features, a
    forwarding backend that asks the device on the other side) defines every hook it might serve
    and names here those it does: the others answer ``UNSUPPORTED`` as if absent, and the
    conformance kit derives ``Capabilities`` from this answer. Required hooks and this one are
    always served. None (or the hook absent): every hook the backend defines. Naming a hook the
    backend does not define fails ``init`` (``INVALID_VALUE``)."""


@hookspec
def no_devices_reason() -> str | None:
    """Why ``init`` returned no devices (no driver library, a driver with no GPU, ...), or left
    some out (an OpenCL device without shared virtual memory), in words for ``offload backends``;
    None when there is nothing to say. Asked once, right after ``init``. Optional."""


@hookspec
def platform_info() -> Mapping[PlatformInfo, str]:
    """The platform's own VENDOR_NAME and VERSION (``str`` each; the driver's, e.g. OpenCL's
    CL_PLATFORM_VENDOR and CL_PLATFORM_VERSION), asked once after ``init``. Optional: a property
    left out reads liboffload's "Unknown platform vendor" / "v0.0.1". NAME (the entry-point name)
    and BACKEND are the core's."""


@hookspec
def deinit() -> None:
    """Release every driver resource. Called once, after every ``deinit_device``."""


@hookspec
def deinit_device(device: NativeDevice) -> None:
    """Release one device's resources (its queues, programs and memory are already gone)."""


@hookspec
def get_device_info(device: NativeDevice) -> Mapping[DeviceInfo, Any]:
    """The device's properties, asked once at ``olInit`` and cached by the core.

    ``DEVICE_INFO_TYPES`` gives each property's C type, and so its Python value: ``char[]`` a
    ``str``; ``uint32_t`` / ``uint64_t`` an ``int`` in that type's range (else ``olGetDeviceInfo``
    fails with ``OL_ERRC_BACKEND_FAILURE`` naming the property, the value and the type); ``bool`` a
    ``bool``; ``ol_dimensions_t`` an ``offload.Dimensions`` (or a 3-tuple of uint32); the enum types
    a ``DeviceType`` / ``DeviceFpCapabilityFlag`` (or int). PLATFORM is the core's. Left out of the
    mapping, TYPE, the FP configs and ``*_FP_SUPPORT``, the vector widths, MAX_MEM_ALLOC_SIZE,
    PRODUCT_NAME, COOPERATIVE_LAUNCH_SUPPORT and DRIVER_ID take the defaults docs/backends.md lists
    (liboffload R1's, or derived from the properties given); any other property left out makes
    ``olGetDeviceInfo`` fail with ``OL_ERRC_UNIMPLEMENTED``.
    """
