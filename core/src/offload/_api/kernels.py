"""Kernels: launches (the argument buffer against the kernel's parameters, the grid against the
device's limits) and occupancy."""

from __future__ import annotations

from typing import Any

from collections.abc import Mapping

from .common import fail, size_arg
from .._compiled.interface import ENABLED as _COMPILED, publish_launch
from .._values.enums import ErrorCode, KernelLaunchPropType, SymbolKind
from .._core.handles import Device, Queue, Symbol
from .._core.ranges import ADDRESS_LIMIT
from .._core.session import Session
from .._values.types import KernelLaunchSizeArgs, KernelParam

_KERNEL = SymbolKind.KERNEL  # a module global: reading an enum member off its class costs ~60 ns


def olLaunchKernel(
    ctx: Session,
    queue: Queue | None,
    device: Device,
    kernel: Symbol,
    args: Any,
    launch: KernelLaunchSizeArgs,
    properties: Any = None,
) -> None:
    """Launch a kernel. The argument buffer must hold every parameter the backend reports
    (``kernel_params``); the grid must fit the device's limits. Its program is not unloaded while
    the launch is being made, and not before queued launches have run (``olDestroyProgram``)."""
    # one test for the common case (a kernel of this device, on its queue, a launch already found
    # within its limits); anything else is sorted out, in liboffload's order, by _check_launch
    if (
        kernel.launch_device is not device
        or (queue is not None and queue.device is not device)
        or launch.__class__ is not KernelLaunchSizeArgs
        or launch.checked_for is not device.limits
    ):
        _check_launch(queue, device, kernel, launch)
    if args.__class__ is list or args.__class__ is tuple:
        args = pack_arguments(kernel, args)
    if args is None:
        if kernel.params:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"kernel {kernel.name!r} takes {len(kernel.params)} parameter(s) ({kernel.args_size} bytes) "
                "but ArgumentsData is NULL",
            )
    else:
        if args.__class__ is bytes:
            size = len(args)
        else:
            try:
                view = memoryview(args)
            except TypeError:
                raise fail(
                    ErrorCode.INVALID_ARGUMENT, f"ArgumentsData must be bytes-like or None, got {type(args).__name__}"
                ) from None
            if not view.c_contiguous:
                raise fail(ErrorCode.INVALID_ARGUMENT, "ArgumentsData must be a contiguous buffer")
            size = view.nbytes
        needed = kernel.args_size
        if needed is not None and size < needed:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"ArgumentsSize {size} is shorter than the {needed} bytes of kernel {kernel.name!r}'s parameters",
            )
    # the entry point registered the kernel in ctx.calls before calling this: either
    # olDestroyProgram sees it there (and waits), or this sees the kernel destroyed
    if kernel._ctx is None:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"Kernel {kernel!r} was destroyed with its program")
    # (a Symbol checked to be a kernel has its native kernel; only a global variable's is None)
    native_queue = None if queue is None else queue.native
    if properties is not None and _cooperative(properties):
        _launch_cooperative(device, native_queue, kernel, args, launch)
        return
    if _COMPILED and properties is None:  # the verdict the compiled path replays (_compiled.interface)
        needed = kernel.args_size
        publish_launch(
            kernel, queue, device, launch, not kernel.params, needed or 0,
            launch.num_groups, launch.group_size, launch.dyn_shared_memory, needed is not None,
        )  # fmt: skip
    device.backend.launch_kernel(device.native, native_queue, kernel.native, args, launch)  # type: ignore[arg-type]


def pack_arguments(kernel: Symbol, values: list[Any] | tuple[Any, ...]) -> bytes:
    """Per-argument values (main's ArgPtrs / ArgSizes) as the packed argument buffer: each value
    bytes-like, as many as the kernel's parameters and each of its parameter's size, placed at the
    parameter's offset (a backend that reports no parameters: packed at natural alignment)."""
    views = []
    for i, value in enumerate(values):
        try:
            views.append(memoryview(value).cast("B"))
        except TypeError:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"argument {i} must be bytes-like (a ctypes value, bytes...), got {type(value).__name__}") from None
    params = kernel.params
    if params is None:
        packed = bytearray()
        for view in views:
            align = min(8, max(1, view.nbytes))
            packed += bytes(-len(packed) % (align if align & (align - 1) == 0 else 1))
            packed += view
        return bytes(packed)
    if len(views) != len(params):
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"NumArgs {len(views)} does not match the {len(params)} parameter(s) of kernel {kernel.name!r}",
        )
    packed = bytearray(kernel.args_size or 0)
    for i, (view, param) in enumerate(zip(views, params)):
        if view.nbytes != param.size:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"ArgSizes[{i}] = {view.nbytes} but parameter {i} of kernel {kernel.name!r} is {param.size} bytes",
            )
        packed[param.offset : param.offset + param.size] = view
    return bytes(packed)


def _cooperative(properties: Any) -> bool:
    """Whether launch ``properties`` (a mapping, or pairs, of KernelLaunchPropType and value; a
    NONE pair ends them, as C's OL_KERNEL_LAUNCH_PROP_END) ask for a cooperative launch."""
    pairs = properties.items() if isinstance(properties, Mapping) else properties
    cooperative = False
    try:
        for prop, value in pairs:
            try:
                member = KernelLaunchPropType(prop)
            except ValueError:
                raise fail(ErrorCode.INVALID_ENUMERATION, f"olLaunchKernel property enum '{prop}' is invalid") from None
            if member is KernelLaunchPropType.NONE:
                break
            cooperative = bool(value)
    except TypeError:
        raise fail(
            ErrorCode.INVALID_ARGUMENT, f"Properties must be a mapping or pairs of KernelLaunchPropType and value, got {properties!r}"
        ) from None
    return cooperative


def _launch_cooperative(device: Device, native_queue: Any, kernel: Symbol, args: Any, launch: KernelLaunchSizeArgs) -> None:
    """A cooperative launch: every group resident at once (at most the device's
    ``max_cooperative_groups``: INVALID_SIZE beyond), through ``launch_kernel_cooperative``
    (UNSUPPORTED, naming the device, where the backend has none)."""
    backend = device.backend
    if "launch_kernel_cooperative" not in backend.implemented:
        raise fail(
            ErrorCode.UNSUPPORTED,
            f"{device._describe()} does not support cooperative launches "
            f"(backend {backend.name!r} does not implement 'launch_kernel_cooperative')",
        )
    if "max_cooperative_groups" in backend.implemented:
        limit = int(backend.max_cooperative_groups(device.native, kernel.native, launch))  # type: ignore[arg-type]  # a kernel: native set
        if launch.total_groups > limit:
            raise fail(
                ErrorCode.INVALID_SIZE,
                f"a cooperative launch of {launch.total_groups} groups exceeds the {limit} that {device._describe()} "
                f"can run at once (olGetKernelMaxCooperativeGroupCount)",
            )
    backend.launch_kernel_cooperative(device.native, native_queue, kernel.native, args, launch)  # type: ignore[arg-type]  # a kernel: native set


def olGetKernelMaxCooperativeGroupCount(ctx: Session, device: Device, kernel: Symbol, launch: Any) -> int:
    """How many groups of ``launch``'s group size a cooperative launch can run at once."""
    _check_launch(None, device, kernel, launch)
    if "max_cooperative_groups" not in device.backend.implemented:
        raise fail(
            ErrorCode.UNSUPPORTED,
            f"{device._describe()}: cooperative launch not supported "
            f"(backend {device.backend.name!r} does not implement 'max_cooperative_groups')",
        )
    return int(device.backend.max_cooperative_groups(device.native, kernel.native, launch))  # type: ignore[arg-type]  # a kernel: native set


def olGetKernelParamsExt(ctx: Session, kernel: Symbol) -> tuple[KernelParam, ...] | None:
    """The kernel's parameters as its backend reported them at ``olGetSymbol`` (offsets and sizes
    checked there), or None when the backend cannot tell: an offload extension, so that a proxy
    or a tool can describe a kernel without the object layer."""
    if kernel.kind is not _KERNEL:
        raise fail(ErrorCode.SYMBOL_KIND, "olGetKernelParamsExt: the symbol is not a kernel")
    return kernel.params


def _check_launch(queue: Queue | None, device: Device, kernel: Symbol, launch: Any) -> None:
    """Refuse a launch on another device's queue or kernel, of a global variable, or with a size
    that is not a KernelLaunchSizeArgs within the device's limits."""
    if queue is not None and queue.device is not device:
        raise fail(ErrorCode.INVALID_DEVICE, "device specified does not match the device of the given queue")
    if kernel.kind is not _KERNEL:
        raise fail(ErrorCode.SYMBOL_KIND, "provided symbol is not a kernel")
    if kernel.program.device is not device:
        raise fail(ErrorCode.INVALID_DEVICE, "the kernel's program was created on another device")
    if launch.__class__ is not KernelLaunchSizeArgs:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"LaunchSizeArgs must be KernelLaunchSizeArgs, got {launch!r}")
    if launch.checked_for is not device.limits:
        _check_launch_size(launch, device)


def _check_launch_size(launch: KernelLaunchSizeArgs, device: Device) -> None:
    """Refuse a zero extent, a grid of 2**64 groups or more, or one beyond the device's limits
    (INVALID_SIZE); remember a launch found within them."""
    if launch.zero_extent is not None:
        raise fail(ErrorCode.INVALID_SIZE, f"launch size {launch.zero_extent} is 0")
    if launch.total_groups >= ADDRESS_LIMIT:
        raise fail(ErrorCode.INVALID_SIZE, f"the grid has {launch.total_groups} groups, more than 2**64 - 1")
    max_group, max_group_dims, max_work, max_work_dims = device.limits
    groups, items = launch.num_groups, launch.group_size
    if max_group is not None and launch.group_items > max_group:
        raise fail(
            ErrorCode.INVALID_SIZE,
            f"a group of {launch.group_items} work-items exceeds MAX_WORK_GROUP_SIZE {max_group}",
        )
    for axis, extent, work, group_limit, work_limit in zip(
        "xyz", items, (g * i for g, i in zip(groups, items)), max_group_dims or (None,) * 3, max_work_dims or (None,) * 3
    ):
        if group_limit is not None and extent > group_limit:
            raise fail(
                ErrorCode.INVALID_SIZE,
                f"GroupSize.{axis} = {extent} exceeds the device's MAX_WORK_GROUP_SIZE_PER_DIMENSION.{axis} = {group_limit}",
            )
        if work_limit is not None and work > work_limit:
            raise fail(
                ErrorCode.INVALID_SIZE,
                f"NumGroups.{axis} * GroupSize.{axis} = {work} work-items exceed the device's "
                f"MAX_WORK_SIZE_PER_DIMENSION.{axis} = {work_limit}",
            )
    total = launch.total_groups * launch.group_items
    if max_work is not None and total > max_work:
        raise fail(ErrorCode.INVALID_SIZE, f"the grid's {total} work-items exceed MAX_WORK_SIZE {max_work}")
    object.__setattr__(launch, "checked_for", device.limits)  # the one cache field: see KernelLaunchSizeArgs


def olCalculateOptimalOccupancy(ctx: Session, device: Device, kernel: Symbol, shared_memory: Any) -> int:
    if kernel.kind is not SymbolKind.KERNEL:
        raise fail(ErrorCode.SYMBOL_KIND, "provided symbol is not a kernel")
    dynamic = size_arg(shared_memory, "SharedMemory")
    return int(device.backend.max_group_size(device.native, kernel.native, dynamic))  # type: ignore[arg-type]  # a kernel: native set
