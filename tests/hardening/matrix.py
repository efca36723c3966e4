"""The bad-value matrix, run in a child process: every public function x every parameter x the
bad values of its kind (bad handles, bad enums, None, freed, foreign and unmapped addresses,
overruns, wrapping sizes), against the host device, each other argument valid.

Usage: ``python matrix.py [--after CASE]``. Prints ``START <case>`` before each call and
``RESULT <case> <outcome>`` after it (OK, an ``OL_ERRC_*`` name, or ``RAW <exception>``), flushed,
so the parent names the case a crash happened in and restarts after it.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Iterator
from typing import Any

import offload as ol
from offload._api.table import FUNCTIONS
from offload._values.signatures import Function

UNMAPPED = 0xDEAD0000


class IndexInt:
    """An integer of another type (numpy integers behave so)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"IndexInt({self.value:#x})"


class OffloadPtr:
    """A buffer of the Pythonic layer: ``__offload_ptr__`` is its address."""

    def __init__(self, value: int) -> None:
        self.__offload_ptr__ = value

    def __repr__(self) -> str:
        return f"OffloadPtr({self.__offload_ptr__:#x})"


class ArrayLike:
    """Like a numpy array: comparisons give another array whose truth value raises."""

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return self

    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __mod__ = __rmod__ = __eq__  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise ValueError("The truth value of an array with more than one element is ambiguous")

    def __repr__(self) -> str:
        return "ArrayLike()"


def host_device() -> ol.Device:
    found: list[ol.Device] = []
    ol.olIterateDevices(lambda d, _: found.append(d) or True)
    return next(d for d in found if d.platform.kind is ol.PlatformBackend.HOST)


class World:
    """Valid objects of every kind, and dead ones, made once per child."""

    def __init__(self) -> None:
        from offload_host import build_test_kernel

        ol.olInit()  # a session whose handles are all stale afterwards
        old_dev = host_device()
        old_queue = ol.olCreateQueue(old_dev)
        old_program = ol.olCreateProgram(old_dev, build_test_kernel("noargs"))
        self.old = {
            ol.Platform: ol.olGetDeviceInfo(old_dev, ol.DeviceInfo.PLATFORM),
            ol.Device: old_dev,
            ol.Queue: old_queue,
            ol.Event: ol.olCreateEvent(old_queue),
            ol.Program: old_program,
            ol.Symbol: ol.olGetSymbol(old_program, "noargs", ol.SymbolKind.KERNEL),
        }
        ol.olShutDown()
        ol.olInit()
        self.dev = dev = host_device()
        self.platform = ol.olGetDeviceInfo(dev, ol.DeviceInfo.PLATFORM)
        self.binary = build_test_kernel("noargs")
        self.program = ol.olCreateProgram(dev, self.binary)
        self.kernel = ol.olGetSymbol(self.program, "noargs", ol.SymbolKind.KERNEL)
        self.gprogram = ol.olCreateProgram(dev, build_test_kernel("global"))
        self.gsym = ol.olGetSymbol(self.gprogram, "global", ol.SymbolKind.GLOBAL_VARIABLE)
        self.queue = ol.olCreateQueue(dev)
        self.event = ol.olCreateEvent(self.queue)
        self.event2 = ol.olCreateEvent(self.queue)
        self.a = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
        self.b = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64)
        self.host_buf = (ctypes.c_char * 4096)()
        self.h = ctypes.addressof(self.host_buf)
        self.freed = ol.olMemAlloc(dev, ol.AllocType.DEVICE, 64 << 20)  # mmap'd by malloc: unmapped once freed
        ol.olMemFree(self.freed)
        dead_queue = ol.olCreateQueue(dev)
        dead_event = ol.olCreateEvent(dead_queue)
        ol.olDestroyEvent(dead_event)
        ol.olDestroyQueue(dead_queue)
        dead_program = ol.olCreateProgram(dev, self.binary)
        dead_symbol = ol.olGetSymbol(dead_program, "noargs", ol.SymbolKind.KERNEL)
        ol.olDestroyProgram(dead_program)
        self.dead = {
            ol.Queue: dead_queue,
            ol.Event: dead_event,
            ol.Program: dead_program,
            ol.Symbol: dead_symbol,
        }
        self.launch = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
        self.foo = None  # a kernel with a parameter, once the host backend reports parameters
        if "kernel_params" in dev.backend.implemented:
            foo_program = ol.olCreateProgram(dev, build_test_kernel("foo"))
            self.foo = ol.olGetSymbol(foo_program, "foo", ol.SymbolKind.KERNEL)

    def baselines(self) -> dict[str, tuple[Any, ...]]:
        """Valid arguments of every function (variants with a queue end in ``@queued``)."""
        w = self
        return {
            "olIterateDevices": (lambda d, u: True, None),
            "olGetPlatformInfo": (w.platform, ol.PlatformInfo.NAME),
            "olGetPlatformInfoSize": (w.platform, ol.PlatformInfo.NAME),
            "olGetDeviceInfo": (w.dev, ol.DeviceInfo.NAME),
            "olGetDeviceInfoSize": (w.dev, ol.DeviceInfo.NAME),
            "olMemAlloc": (w.dev, ol.AllocType.DEVICE, 64),
            "olMemFree": (None,),
            "olMemAllocAsync": (w.queue, ol.AllocType.DEVICE, 64),
            "olMemFreeAsync": (w.queue, None),
            "olGetMemInfo": (w.a, ol.MemInfo.SIZE),
            "olGetMemInfoSize": (w.a, ol.MemInfo.SIZE),
            "olMemRegister": (w.dev, w.h, 64, 0),
            "olMemUnregister": (w.dev, w.h, 0),
            "olMemcpy": (None, w.a, w.dev, w.b, w.dev, 64),
            "olMemcpy@queued": (w.queue, w.a, w.dev, w.b, w.dev, 64),
            "olMemFill": (None, w.a, b"\1", 64),
            "olMemFill@queued": (w.queue, w.a, b"\1", 64),
            "olCreateQueue": (w.dev,),
            "olDestroyQueue": (None,),
            "olSyncQueue": (w.queue,),
            "olQueryQueue": (w.queue,),
            "olWaitEvents": (w.queue, [w.event]),
            "olGetQueueInfo": (w.queue, ol.QueueInfo.DEVICE),
            "olGetQueueInfoSize": (w.queue, ol.QueueInfo.DEVICE),
            "olLaunchHostFunction": (w.queue, lambda u: None, None),
            "olCreateEvent": (w.queue,),
            "olDestroyEvent": (None,),
            "olSyncEvent": (w.event,),
            "olGetEventInfo": (w.event, ol.EventInfo.QUEUE),
            "olGetEventInfoSize": (w.event, ol.EventInfo.QUEUE),
            "olGetEventElapsedTime": (w.event, w.event2),
            "olCreateProgram": (w.dev, w.binary),
            "olIsValidBinary": (w.dev, w.binary),
            "olDestroyProgram": (None,),
            "olGetSymbol": (w.program, "noargs", ol.SymbolKind.KERNEL),
            "olGetSymbolInfo": (w.gsym, ol.SymbolInfo.GLOBAL_VARIABLE_SIZE),
            "olGetSymbolInfoSize": (w.gsym, ol.SymbolInfo.GLOBAL_VARIABLE_SIZE),
            "olLaunchKernel": (None, w.dev, w.kernel, None, w.launch),
            "olLaunchKernel@queued": (w.queue, w.dev, w.kernel, None, w.launch),
            "olCalculateOptimalOccupancy": (w.dev, w.kernel, 0),
            # liboffload main (issue 17)
            "olMemAllocHost": (w.dev, 64),
            "olMemAllocAligned": (w.dev, ol.AllocType.DEVICE, 64, 64),
            "olMemAllocAlignedHost": (w.dev, 64, 64),
            "olMemIsAccessible": (w.dev, w.a, 64),
            "olMemPrefetch": (w.queue, [w.a], [64], ol.MemMigrationFlag.HOST_TO_DEVICE),
            "olIteratePlatforms": (lambda p, u: True, None),
            "olIterateCompatibleDevices": (w.binary, lambda d, u: True, None),
            "olIterateSymbols": (w.program, ol.SymbolKind.KERNEL, lambda s, u: True, None),
            "olGetKernelMaxCooperativeGroupCount": (w.dev, w.kernel, w.launch),
            **(
                {
                    "olLaunchKernel@foo": (None, w.dev, w.foo, w.a.to_bytes(8, "little"), w.launch),
                    "olLaunchKernel@foo@queued": (w.queue, w.dev, w.foo, w.a.to_bytes(8, "little"), w.launch),
                }
                if w.foo is not None
                else {}
            ),
        }

    def bad_values(self, kind: str, handle: type | None) -> list[tuple[str, str, Any]]:
        """(class, label, value) for one parameter kind."""
        w = self
        common = [("none", "None", None), ("type", "str", "x"), ("type", "float", 1.5), ("type", "arraylike", ArrayLike())]
        if kind == "handle":
            wrong = w.queue if handle is not ol.Queue else w.dev
            values = [("handle", "int", 5), ("handle", "object", object()), ("handle", "wrong-kind", wrong)]
            if handle in w.dead:
                values.append(("freed", "dead-handle", w.dead[handle]))
            if handle in w.old:
                values.append(("freed", "old-session", w.old[handle]))
            return common[:2] + values
        if kind == "pointer":
            return common + [
                ("null", "zero", 0),
                ("wrap", "negative", -1),
                ("wrap", "2**64", 2**64),
                ("wrap", "2**64+a", 2**64 + w.a),
                ("wrap", "top-8", 2**64 - 8),
                ("unmapped", "0xdead0000", UNMAPPED),
                ("unmapped", "one", 1),
                ("freed", "freed-64MiB", w.freed),
                ("overrun", "a+8", w.a + 8),
                ("overrun", "a+60", w.a + 60),
                ("foreign", "index-unmapped", IndexInt(UNMAPPED)),
                ("foreign", "offload-ptr-unmapped", OffloadPtr(UNMAPPED)),
                ("foreign", "offload-ptr-str", OffloadPtr("x")),  # type: ignore[arg-type]
                ("type", "bool", True),
            ]
        if kind == "size":
            return common + [
                ("wrap", "negative", -1),
                ("wrap", "2**64", 2**64),
                ("wrap", "2**64+8", 2**64 + 8),
                ("wrap", "2**64-1", 2**64 - 1),
                ("overrun", "2**63", 2**63),
                ("overrun", "65", 65),
                ("overrun", "4096", 4096),
                ("overrun", "2**40", 1 << 40),
                ("foreign", "index-65", IndexInt(65)),
            ]
        if kind == "enum":
            return common + [
                ("enum", "negative", -1),
                ("enum", "999", 999),
                ("enum", "2**32", 2**32),
                ("enum", "index-999", IndexInt(999)),
            ]
        if kind == "data":
            return common[:1] + [
                ("type", "int", 5),
                ("type", "str", "x"),
                ("type", "noncontiguous", memoryview(bytearray(64))[::2]),
                ("overrun", "empty", b""),
                ("overrun", "three", b"abc"),
                ("type", "junk", b"junk" * 16),
                ("type", "arraylike", ArrayLike()),
            ]
        if kind == "events":
            return [
                ("none", "None", None),
                ("type", "int", 5),
                ("none", "[None]", [None]),
                ("type", "[5]", [5]),
                ("freed", "[dead-event]", [w.dead[ol.Event]]),
                ("type", "[event,str]", [w.event, "x"]),
            ]
        if kind == "callback":
            return [("none", "None", None), ("type", "int", 5), ("type", "str", "x")]
        if kind == "struct":
            return common[:3] + [
                ("wrap", "2**96-groups", ol.KernelLaunchSizeArgs(3, (2**32 - 1,) * 3, (1, 1, 1))),
                ("overrun", "2**32-items", ol.KernelLaunchSizeArgs(2, (1, 1, 1), (2**16, 2**16, 1))),
                ("overrun", "grid-2**33", ol.KernelLaunchSizeArgs(1, (2**32 - 1, 1, 1), (2, 1, 1))),
            ]
        if kind == "string":
            return common[:3] + [
                ("type", "empty", ""),
                ("type", "nul", "a\0b"),
                ("type", "bad-utf8", b"\xff"),
                ("foreign", "libc-symbol", "printf"),
            ]
        return []


def cases(world: World) -> Iterator[tuple[str, str, Callable[[], Any]]]:
    """(case name, class, thunk) for every function x parameter x bad value."""
    baselines = world.baselines()
    table: dict[str, Function] = {f.name: f for f in FUNCTIONS}
    for variant, baseline in baselines.items():
        fn = table[variant.split("@")[0]]
        call = getattr(ol, fn.name)
        for index, param in enumerate(fn.params):
            if param.kind == "any":
                continue
            if "@queued" in variant and index == 0:
                continue  # the queue itself is varied in the synchronous variant
            for klass, label, value in world.bad_values(param.kind, param.handle):
                if "@foo" in variant and label == "junk":
                    continue  # bytes that the kernel's own code reads as a pointer: its own fault
                args = list(baseline) + [None] * (len(fn.params) - len(baseline))  # main's trailing optionals
                args[index] = value
                yield f"{variant}:{param.c}={label}", klass, (lambda call=call, args=tuple(args): call(*args))


def main(argv: list[str]) -> int:
    after = argv[argv.index("--after") + 1] if "--after" in argv else None
    world = World()
    skipping = after is not None
    out = sys.stdout
    for name, klass, thunk in cases(world):
        if skipping:
            skipping = name != after
            continue
        out.write(f"START {name}\n")
        out.flush()
        try:
            thunk()
            outcome = "OK"
        except ol.OffloadError as error:
            outcome = f"OL_ERRC_{error.code.name}"
        except BaseException as exc:  # noqa: B036 - reported as a raw exception
            outcome = f"RAW {type(exc).__name__}: {exc}".replace("\n", " ")
        out.write(f"RESULT {name} {klass} {outcome}\n")
        out.flush()
    try:
        ol.olSyncQueue(world.queue)
    except ol.OffloadError:
        pass
    while True:
        try:
            ol.olShutDown()
        except ol.OffloadError as error:
            if error.code is ol.ErrorCode.UNINITIALIZED:
                break
            continue
    out.write("END\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
