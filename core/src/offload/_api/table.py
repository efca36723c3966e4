"""One declarative table of the ol* API (liboffload's ``.td`` files, for Python).

Each ``Function`` lists its parameters in C order with their C names, and its own validation
conditions in the ``.td`` order. From it ``_api.functions`` generates every public function: the
initialisation check, the validation (own conditions, then ``NULL == <handle>`` checks, then
``NULL == <pointer>`` checks, as liboffload's generator orders them), the handle liveness checks,
the call of the implementation, and the trace line. It is data only: ``_api.functions`` binds each
function to its implementation.
"""

from __future__ import annotations

from .._core.handles import Context, Device, Event, Platform, Program, Queue, Symbol
from .._values.enums import ErrorCode
from .._values.signatures import Check, Function, Out, Param

__all__ = ["FUNCTIONS", "Check", "Function", "Out", "Param"]

def _handle(py: str, c: str, cls: type, optional: bool = False) -> Param:
    return Param(py, c, "handle", cls, optional)


def _info_fns(prefix: str, handle: Param, enum_c: str = "PropName") -> tuple[Function, Function]:
    prop = Param("prop", enum_c, "enum")
    return (
        Function(f"olGet{prefix}Info", (handle, prop), f"The value of one {prefix.lower()} property.", out=Out("PropValue", "info")),
        Function(
            f"olGet{prefix}InfoSize",
            (handle, prop),
            f"The C size in bytes of one {prefix.lower()} property.",
            out=Out("PropSizeRet", "size"),
        ),
    )


_DEVICE = _handle("device", "Device", Device)
_CONTEXT = Param("context", "Context", "context", Context, optional=True, default=None, level="main")
_ALIGNMENT_CHECKS = (
    Check(ErrorCode.INVALID_ARGUMENT, "Alignment == 0", "type(alignment) is int and alignment == 0"),
    Check(
        ErrorCode.INVALID_ARGUMENT,
        "(Alignment & (Alignment - 1)) != 0",
        "type(alignment) is int and alignment > 0 and alignment & (alignment - 1) != 0",
    ),
)
_SIZE_NOT_ZERO = Check(ErrorCode.INVALID_SIZE, "Size == 0", "size == 0")
_QUEUE = _handle("queue", "Queue", Queue)
_OPT_QUEUE = _handle("queue", "Queue", Queue, optional=True)

FUNCTIONS: tuple[Function, ...] = (
    Function(
        "olIterateDevices",
        (Param("callback", "Callback", "callback"), Param("user_data", "UserData", "any", optional=True, default=None)),
        "Call ``callback(device, user_data)`` for every device until it returns False.",
    ),
    *_info_fns("Platform", _handle("platform", "Platform", Platform)),
    *_info_fns("Device", _DEVICE),
    Function(
        "olMemAlloc",
        (_DEVICE, Param("alloc_type", "Type", "enum"), Param("size", "Size", "size"), _CONTEXT),
        "Allocate ``size`` bytes of HOST, DEVICE or MANAGED memory in ``context`` (default: the device's "
        "platform's); return the address. At API level main HOST is refused: use olMemAllocHost.",
        checks=(Check(ErrorCode.INVALID_SIZE, "Size == 0", "size == 0"),),
        out=Out("AllocationOut", "pointer"),
    ),
    Function(
        "olMemFree",
        (Param("address", "Address", "pointer"), _CONTEXT),
        "Free an olMemAlloc allocation (its owner is found; a context given must be its own: INVALID_CONTEXT), once every busy queue (live or parked) has "
        "finished its work (from a host function: queued behind its own queue).",
    ),
    Function(
        "olMemAllocAsync",
        (_QUEUE, Param("alloc_type", "Type", "enum"), Param("size", "Size", "size")),
        "offload extension (not in liboffload): allocate ``size`` bytes of DEVICE memory in ``queue``'s order "
        "(cuMemAllocAsync, hipMallocAsync; elsewhere the core's pool), owned by the queue's context; usable by "
        "the queue's later work at once, by other queues after an event of it. Free it with olMemFreeAsync or olMemFree.",
        checks=(_SIZE_NOT_ZERO,),
        out=Out("AllocationOut", "pointer"),
    ),
    Function(
        "olMemFreeAsync",
        (_QUEUE, Param("address", "Address", "pointer")),
        "offload extension (not in liboffload): free a DEVICE allocation of the queue's device in ``queue``'s order: "
        "refused by every range check at once, given back once the queue's earlier work has finished, without "
        "waiting for any queue.",
    ),
    Function(
        "olGetMemInfo",
        (Param("ptr", "Ptr", "pointer"), Param("prop", "PropName", "enum"), _CONTEXT),
        "A property of the allocation containing ``ptr`` (any interior pointer; of ``context`` when given).",
        out=Out("PropValue", "info"),
    ),
    Function(
        "olGetMemInfoSize",
        (Param("ptr", "Ptr", "pointer"), Param("prop", "PropName", "enum"), _CONTEXT),
        "The C size in bytes of a memory property.",
        out=Out("PropSizeRet", "size"),
    ),
    Function(
        "olMemRegister",
        (_DEVICE, Param("ptr", "Ptr", "pointer"), Param("size", "Size", "size"), Param("flags", "Flags", "enum")),
        "Register (and optionally page-lock) host memory; return the pinned pointer.",
        checks=(Check(ErrorCode.INVALID_SIZE, "Size == 0", "size == 0"),),
        out=Out("PinnedPtr", "pointer"),
    ),
    Function(
        "olMemUnregister",
        (_DEVICE, Param("ptr", "Ptr", "pointer"), Param("flags", "Flags", "enum")),
        "Unregister (and optionally unlock) host memory registered with olMemRegister.",
    ),
    Function(
        "olMemcpy",
        (
            _OPT_QUEUE,
            Param("dst", "DstPtr", "pointer"),
            _handle("dst_device", "DstDevice", Device),
            Param("src", "SrcPtr", "pointer"),
            _handle("src_device", "SrcDevice", Device),
            Param("size", "Size", "size"),
        ),
        "Copy ``size`` bytes; host pointers use a device of the host platform. No queue: synchronous. "
        "Both ranges are checked first: inside the allocation they touch (INVALID_SIZE), live device memory "
        "and mapped host memory (INVALID_ARGUMENT), no wrapping past 2**64.",
    ),
    Function(
        "olMemFill",
        (
            _OPT_QUEUE,
            Param("ptr", "Ptr", "pointer"),
            Param("pattern", "PatternPtr", "data", size_name="PatternSize", size_first=True),
            Param("fill_size", "FillSize", "size"),
        ),
        "Fill ``fill_size`` bytes at ``ptr`` with the repeated ``pattern``. No queue: synchronous. The range "
        "is checked as olMemcpy's are.",
        checks=(
            Check(ErrorCode.INVALID_SIZE, "PatternSize == 0", "pattern is not None and _nbytes(pattern) == 0"),
            Check(
                ErrorCode.INVALID_SIZE,
                "FillSize % PatternSize != 0",
                "pattern is not None and type(fill_size) is int and fill_size % _nbytes(pattern) != 0",
            ),
        ),
    ),
    Function(
        "olCreateQueue",
        (_DEVICE, _CONTEXT),
        "Create a queue in ``context`` (reusing a finished parked one; an error it still held goes to the final olShutDown).",
        out=Out("Queue", "handle"),
    ),
    Function(
        "olDestroyQueue",
        (_QUEUE,),
        "Destroy a queue; work already enqueued still runs, and its errors reach the final olShutDown.",
    ),
    Function("olSyncQueue", (_QUEUE,), "Block until the queue's work is complete."),
    Function(
        "olQueryQueue",
        (_QUEUE,),
        "Whether the queue's work is complete, without blocking.",
        out=Out("IsQueueWorkCompleted", "bool"),
    ),
    Function(
        "olWaitEvents",
        (_QUEUE, Param("events", "Events", "events", size_name="NumEvents")),
        "Make later work on ``queue`` wait for every event in ``events``.",
    ),
    *_info_fns("Queue", _QUEUE),
    Function(
        "olLaunchHostFunction",
        (_QUEUE, Param("callback", "Callback", "callback"), Param("user_data", "UserData", "any", optional=True, default=None)),
        "Run ``callback(user_data)`` in queue order.",
    ),
    Function(
        "olCreateEvent",
        (_QUEUE, Param("flags", "Flags", "enum", optional=True, default=None, level="main")),
        "Record an event after the queue's current work; ``flags``: EventFlags (ENABLE_PROFILING for "
        "olGetEventElapsedTime at API level main).",
        out=Out("Event", "handle"),
    ),
    Function("olDestroyEvent", (_handle("event", "Event", Event),), "Destroy an event."),
    Function("olSyncEvent", (_handle("event", "Event", Event),), "Block until the event is complete."),
    *_info_fns("Event", _handle("event", "Event", Event)),
    Function(
        "olGetEventElapsedTime",
        (_handle("start", "StartEvent", Event), _handle("end", "EndEvent", Event)),
        "Milliseconds between two events of one device.",
        out=Out("ElapsedTime", "float"),
    ),
    Function(
        "olCreateProgram",
        (_DEVICE, Param("data", "ProgData", "data", size_name="ProgDataSize"), _CONTEXT),
        "Load a program from a copy of ``data``, owned by ``context``.",
        out=Out("Program", "handle"),
    ),
    Function(
        "olIsValidBinary",
        (_DEVICE, Param("data", "ProgData", "data", size_name="ProgDataSize")),
        "Whether ``data`` could be loaded on ``device``.",
        out=Out("IsValid", "bool"),
    ),
    Function(
        "olDestroyProgram",
        (_handle("program", "Program", Program),),
        "Unload a program from its device once no launch of its kernels is being made or queued on its "
        "device (from a host function: queued behind its own queue).",
    ),
    Function(
        "olGetSymbol",
        (_handle("program", "Program", Program), Param("name", "Name", "string"), Param("kind", "Kind", "enum")),
        "The kernel or global variable ``name`` (the same handle each time).",
        out=Out("Symbol", "handle"),
    ),
    *_info_fns("Symbol", _handle("symbol", "Symbol", Symbol)),
    Function(
        "olLaunchKernel",
        (
            _OPT_QUEUE,
            _DEVICE,
            _handle("kernel", "Kernel", Symbol),
            Param("args", "ArgumentsData", "kernel_args", optional=True, size_name="ArgumentsSize"),
            Param("launch_size_args", "LaunchSizeArgs", "struct"),
            Param("properties", "Properties", "any", optional=True, default=None, level="main"),
        ),
        "Launch a kernel. ``args``: the packed argument struct (R1) or a sequence of per-argument values, "
        "each bytes-like (main's ArgPtrs/ArgSizes: as many as the kernel's parameters, each of its size). "
        "``properties``: a mapping or pairs of KernelLaunchPropType and value (IS_COOPERATIVE: True for a "
        "cooperative launch). Main's order ``(queue, device, kernel, launch_size_args, properties, args)`` is "
        "accepted too. No queue: synchronous. ``args`` must hold every parameter the backend reports "
        "(INVALID_ARGUMENT), the grid must fit the device's limits (INVALID_SIZE).",
        registers="kernel",
        prologue=(
            "    if args.__class__ is _KernelLaunchSizeArgs:",
            "        args, launch_size_args, properties = properties, args, launch_size_args",
        ),
    ),
    Function(
        "olCalculateOptimalOccupancy",
        (_DEVICE, _handle("kernel", "Kernel", Symbol), Param("shared_memory", "SharedMemory", "size")),
        "The group size giving optimal occupancy with ``shared_memory`` bytes of dynamic memory.",
        out=Out("GroupSize", "size"),
    ),
    # --- liboffload main (after R1), and what it has open that users asked for -----------------------
    Function(
        "olCreateContext",
        (Param("devices", "Devices", "handles", size_name="DevicesCount", size_first=True),),
        "A context over ``devices`` (one platform, one driver ID): the owner of the allocations, queues "
        "and programs made in it.",
        out=Out("Context", "handle"),
    ),
    Function(
        "olDestroyContext",
        (_handle("context", "Context", Context),),
        "Destroy a context that owns nothing any more (INVALID_CONTEXT naming what it still owns); a "
        "platform's default context is never destroyed.",
    ),
    *_info_fns("Context", _handle("context", "Context", Context)),
    Function(
        "olMemAllocHost",
        (_DEVICE, Param("size", "Size", "size"), _CONTEXT),
        "Allocate ``size`` bytes of host memory accessible from ``device``; return the address.",
        checks=(_SIZE_NOT_ZERO,),
        out=Out("AllocationOut", "pointer"),
    ),
    Function(
        "olMemAllocAligned",
        (_DEVICE, Param("alloc_type", "Type", "enum"), Param("size", "Size", "size"), Param("alignment", "Alignment", "size"), _CONTEXT),
        "Allocate ``size`` bytes whose address is a multiple of ``alignment`` (a power of two); "
        "UNSUPPORTED (naming the device) for an alignment the device cannot give.",
        checks=(_SIZE_NOT_ZERO, *_ALIGNMENT_CHECKS),
        out=Out("AllocationOut", "pointer"),
    ),
    Function(
        "olMemAllocAlignedHost",
        (_DEVICE, Param("size", "Size", "size"), Param("alignment", "Alignment", "size"), _CONTEXT),
        "olMemAllocAligned of host memory.",
        checks=(_SIZE_NOT_ZERO, *_ALIGNMENT_CHECKS),
        out=Out("AllocationOut", "pointer"),
    ),
    Function(
        "olMemPrefetch",
        (
            _QUEUE,
            Param("mems", "Mems", "array", optional=True, size_name="Count", size_first=True),
            Param("sizes", "Sizes", "array", optional=True),
            Param("flags", "Flags", "enum"),
        ),
        "Hint that each range ``(mems[i], sizes[i])`` (of allocations) migrates in the direction of "
        "``flags`` (MemMigrationFlag) in queue order; a device without prefetch ignores it.",
        checks=(
            Check(
                ErrorCode.INVALID_NULL_POINTER,
                "Count > 0 && Mems == NULL",
                "mems is None and sizes is not None and _count(sizes) > 0",
            ),
            Check(
                ErrorCode.INVALID_NULL_POINTER,
                "Count > 0 && Sizes == NULL",
                "mems is not None and sizes is None and _count(mems) > 0",
            ),
            Check(
                ErrorCode.INVALID_ENUMERATION,
                "(Flags & ~(OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE | OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST)) != 0",
                "type(flags) is not bool and isinstance(flags, int) and flags & ~3 != 0",
            ),
        ),
    ),
    Function(
        "olIterateSymbols",
        (
            _handle("program", "Program", Program),
            Param("kind", "Kind", "enum"),
            Param("callback", "Callback", "callback"),
            Param("user_data", "UserData", "any", optional=True, default=None),
        ),
        "Call ``callback(symbol, user_data)`` for every symbol of ``kind`` in the program until it returns False.",
    ),
    Function(
        "olGetKernelMaxCooperativeGroupCount",
        (_DEVICE, _handle("kernel", "Kernel", Symbol), Param("launch_size_args", "LaunchSizeArgs", "struct")),
        "The most groups of ``launch_size_args``' group size that a cooperative launch can run at once.",
        out=Out("MaxGroupCount", "size"),
    ),
    Function(
        "olGetKernelParamsExt",
        (_handle("kernel", "Kernel", Symbol),),
        "An offload extension (not liboffload's): the kernel's explicit parameters in order, as laid out in "
        "the packed argument struct (offload.KernelParam: offset, size, kind, name, element, const), as its "
        "backend's kernel_params hook reports them; None when the image does not say. A global variable is "
        "SYMBOL_KIND.",
        out=Out("Params", "params"),
    ),
    Function(
        "olIteratePlatforms",
        (Param("callback", "Callback", "callback"), Param("user_data", "UserData", "any", optional=True, default=None)),
        "Call ``callback(platform, user_data)`` for every platform until it returns False.",
    ),
    Function(
        "olIterateCompatibleDevices",
        (
            Param("data", "ProgData", "data", size_name="ProgDataSize"),
            Param("callback", "Callback", "callback"),
            Param("user_data", "UserData", "any", optional=True, default=None),
        ),
        "Call ``callback(device, user_data)`` for every device that could load ``data`` until it returns False.",
    ),
    Function(
        "olMemcpyRect",
        (
            _OPT_QUEUE,
            Param("dst", "Dst", "struct"),
            Param("src", "Src", "struct"),
            Param("extent", "Extent", "struct"),
        ),
        "Copy a 2D/3D region: ``extent`` (Dimensions: bytes per row, rows, slices) from ``src`` to ``dst`` "
        "(each an offload.Rect: pointer, device, offset (bytes, rows, slices), row and slice pitch). Every "
        "row of both sides is checked as olMemcpy's ranges are. No queue: synchronous. An extent with a "
        "zero side is INVALID_SIZE (as upstream's olMemcpyRect, PR #160321).",
        checks=(
            Check(ErrorCode.INVALID_SIZE, "Extent.x == 0 || Extent.y == 0 || Extent.z == 0", "_zero_extent(extent)"),
        ),
    ),
    Function(
        "olMemIsAccessible",
        (_DEVICE, Param("ptr", "Ptr", "pointer"), Param("size", "Size", "size")),
        "Whether ``device`` can access ``[ptr, ptr + size)``: its own memory, host or managed memory of "
        "its platform, memory registered with it (host devices: host memory the process maps).",
        checks=(_SIZE_NOT_ZERO,),
        out=Out("IsAccessible", "bool"),
    ),
    Function(
        "olPlatformRegisterRPCCallback",
        (_handle("platform", "Platform", Platform), Param("callback", "Callback", "callback")),
        "Refused (UNSUPPORTED): device-side libc RPC needs the device's libc server, which offload has not.",
    ),
)
