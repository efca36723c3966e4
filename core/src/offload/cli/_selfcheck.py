"""``offload selfcheck``: a real saxpy job on every device, verified and timed.

Program discovery: for each platform the program is ``capabilities_for(<platform name>).binary(
"saxpy")``, the backend's conformance capabilities (the ``offload.conformance`` entry point of the
same name, or ``offload.testing.register_capabilities``) asked for a program ``saxpy`` as for the
kit's test programs (``programs_env``/``programs_suffix``, or an overridden ``binary``). The
program holds a kernel ``saxpy(float a, const float *x, float *y, uint64_t n)`` computing
``y[i] = a * x[i] + y[i]`` for every 1-D global id ``i < n``; its argument buffer is that C struct
packed with natural alignment (``struct.pack("f4xPPQ", a, x, y, n)``); it is launched over
``ceil(n / g)`` groups of ``g = min(256, MAX_WORK_GROUP_SIZE, n)`` work-items (so the kernel must
check ``i < n``). A platform whose capabilities give no saxpy is
skipped, with the reason (where they looked).
"""

from __future__ import annotations

import argparse
import array
import math
import os
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import offload as ol
from offload.testing import capabilities_for

from ._common import (
    _ERROR_PREFIX,
    EXIT_FAILED,
    EXIT_NOTHING,
    EXIT_OK,
    SAXPY_A,
    _devices,
    _platform_name,
    _platforms,
    _print_json,
    _query,
    _session,
    format_bytes,
    gb_per_s,
)


def max_size() -> int:
    """The largest ``--size``: global ids are 32-bit, and the job holds about six vectors of
    ``4 * size`` bytes at once (x, y, the result and the expected values on the host, x and y on
    the device), which must fit in the machine's physical memory."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        memory = 1 << 34
    return max(1, min((1 << 32) - 1, memory // 24))


def no_binary_reason(platform_name: str, name: str) -> str:
    """Why ``program_binary`` found nothing: where the platform's capabilities look for it."""
    capabilities = capabilities_for(platform_name)
    variable = capabilities.programs_env
    if variable is None:
        return f"no {name} binary (the {platform_name} backend's conformance capabilities provide none)"
    folder = os.environ.get(variable)
    where = f"{variable} is not set" if not folder else f"{variable}={folder} holds no {name}{capabilities.programs_suffix}"
    return f"no {name} binary: {where} (set it to a folder holding {name}{capabilities.programs_suffix})"


def program_binary(platform_name: str, name: str) -> bytes | None:
    """The program bytes holding kernel ``name`` for a platform, None when it has none.

    Asks the platform's conformance capabilities (``offload.testing.capabilities_for``: declared
    in-process or through the ``offload.conformance`` entry point). An error raised while building
    a binary propagates: it is a failure, not a skip.
    """
    binary = capabilities_for(platform_name).binary(name)
    return None if binary is None else bytes(binary)


def saxpy_inputs(n: int) -> tuple[array.array[float], array.array[float]]:
    """x and y for saxpy, chosen so that ``SAXPY_A * x + y`` is exact in float32."""
    x = array.array("f", (float(i % 1024) * 0.25 for i in range(n)))
    y = array.array("f", (float(i % 17) for i in range(n)))
    return x, y


def saxpy_expected(a: float, x: array.array[float], y: array.array[float]) -> array.array[float]:
    return array.array("f", (a * xi + yi for xi, yi in zip(x, y)))


def verify(result: array.array[float], expected: array.array[float]) -> tuple[bool, int, float]:
    """(ok, mismatches, max abs error); a 1e-6 relative tolerance allows a contracted FMA."""
    if result == expected:
        return True, 0, 0.0
    mismatches, worst = 0, 0.0
    for got, want in zip(result, expected):
        if got != want:
            err = abs(got - want) if not (math.isnan(got) or math.isnan(want)) else math.inf
            worst = max(worst, err)
            if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-6):
                mismatches += 1
    return mismatches == 0, mismatches, worst


@dataclass
class CheckResult:
    """The outcome of one device's self-check."""

    platform: str
    device: str
    index: int
    status: str = "failed"  # "passed", "failed" or "skipped"
    reason: str | None = None
    size: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    throughput_gbps: dict[str, float] = field(default_factory=dict)
    mismatches: int = 0
    max_error: float = 0.0


def _host_device(devices: Sequence[ol.Device]) -> ol.Device | None:
    for device in devices:
        platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
        if ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST:
            return device
    return None


def _group_size(device: ol.Device, n: int) -> int:
    try:
        limit = int(ol.olGetDeviceInfo(device, ol.DeviceInfo.MAX_WORK_GROUP_SIZE))
    except ol.OffloadError:
        limit = 256
    return max(1, min(256, limit, n))


def _run_saxpy(device: ol.Device, host: ol.Device, binary: bytes, n: int, result: CheckResult) -> None:
    """Allocate, copy in, launch, copy out and verify on ``device``, filling ``result``."""
    nbytes = 4 * n
    x, y = saxpy_inputs(n)
    expected = saxpy_expected(SAXPY_A, x, y)
    out = array.array("f", bytes(nbytes))
    x_host, y_host, out_host = x.buffer_info()[0], y.buffer_info()[0], out.buffer_info()[0]
    cleanup: list[Callable[[], None]] = []
    t = result.timings_ms
    try:
        start = time.perf_counter()
        x_dev = ol.olMemAlloc(device, ol.AllocType.DEVICE, nbytes)
        cleanup.append(_destroyer(ol.olMemFree, x_dev))
        y_dev = ol.olMemAlloc(device, ol.AllocType.DEVICE, nbytes)
        cleanup.append(_destroyer(ol.olMemFree, y_dev))
        t["alloc"] = (time.perf_counter() - start) * 1e3
        # First touch: the copies below are to be timed without the page faults of fresh memory.
        ol.olMemFill(None, x_dev, b"\0\0\0\0", nbytes)
        ol.olMemFill(None, y_dev, b"\0\0\0\0", nbytes)

        start = time.perf_counter()
        program = ol.olCreateProgram(device, binary)
        cleanup.append(_destroyer(ol.olDestroyProgram, program))
        kernel = ol.olGetSymbol(program, "saxpy", ol.SymbolKind.KERNEL)
        t["program"] = (time.perf_counter() - start) * 1e3

        start = time.perf_counter()
        ol.olMemcpy(None, x_dev, device, x_host, host, nbytes)
        ol.olMemcpy(None, y_dev, device, y_host, host, nbytes)
        t["copy_in"] = (time.perf_counter() - start) * 1e3
        result.throughput_gbps["copy_in"] = gb_per_s(2 * nbytes, t["copy_in"] / 1e3)

        queue = ol.olCreateQueue(device)
        cleanup.append(_destroyer(ol.olDestroyQueue, queue))
        ol.olLaunchHostFunction(queue, _nothing)  # warm up: a lazily started queue worker is not kernel time
        ol.olSyncQueue(queue)
        gsize = _group_size(device, n)
        launch = ol.KernelLaunchSizeArgs(1, (-(-n // gsize), 1, 1), (gsize, 1, 1))
        args = struct.pack("f4xPPQ", SAXPY_A, x_dev, y_dev, n)
        start = time.perf_counter()
        before = ol.olCreateEvent(queue)
        ol.olLaunchKernel(queue, device, kernel, args, launch)
        after = ol.olCreateEvent(queue)
        ol.olSyncEvent(after)
        t["kernel_wall"] = (time.perf_counter() - start) * 1e3
        t["kernel"] = ol.olGetEventElapsedTime(before, after)
        ol.olDestroyEvent(before)
        ol.olDestroyEvent(after)
        ol.olSyncQueue(queue)

        start = time.perf_counter()
        ol.olMemcpy(None, out_host, host, y_dev, device, nbytes)
        t["copy_out"] = (time.perf_counter() - start) * 1e3
        result.throughput_gbps["copy_out"] = gb_per_s(nbytes, t["copy_out"] / 1e3)

        start = time.perf_counter()
        ok, result.mismatches, result.max_error = verify(out, expected)
        t["verify"] = (time.perf_counter() - start) * 1e3
        result.status = "passed" if ok else "failed"
        if not ok:
            result.reason = f"{result.mismatches} of {n} elements differ (max abs error {result.max_error:g})"
    finally:
        errors: list[ol.OffloadError] = []
        for undo in reversed(cleanup):
            try:
                undo()
            except ol.OffloadError as error:
                errors.append(error)
        if errors and result.status == "passed":
            result.status, result.reason = "failed", f"cleanup failed: {errors[0]}"


def _nothing(_: Any) -> None:
    pass


def _destroyer(destroy: Callable[[Any], None], handle: Any) -> Callable[[], None]:
    return lambda: destroy(handle)


def platform_absence(name: str) -> str:
    """Why platform ``name`` has no device here, from the last ``olInit``'s backend statuses."""
    for status in ol.backend_status():
        if status.name == name:
            if not status.loaded:
                return f"its backend was skipped: {status.reason or 'no reason given'}"
            return f"its backend loaded with 0 devices: {status.note or 'the backend gave no reason'}"
    return "no installed backend has this name (see `offload backends`)"


def check_device(device: ol.Device, index: int, host: ol.Device | None, n: int) -> CheckResult:
    """Run the saxpy self-check on one device; never raises for an API failure."""
    platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
    platform_name = _platform_name(platform)
    result = CheckResult(
        platform_name, str(_query(lambda: ol.olGetDeviceInfo(device, ol.DeviceInfo.NAME))), index, size=n
    )
    if host is None:
        result.reason = "no host platform is loaded, so host memory cannot be copied"
        return result
    try:
        binary = program_binary(platform_name, "saxpy")
    except Exception as error:  # noqa: BLE001 - a broken capabilities plugin fails this device only
        result.reason = f"could not get a saxpy binary: {error}"
        return result
    if binary is None:
        result.status, result.reason = "skipped", no_binary_reason(platform_name, "saxpy")
        return result
    try:
        _run_saxpy(device, host, binary, n, result)
    except ol.OffloadError as error:
        result.status, result.reason = "failed", str(error)
    return result


def format_check(result: CheckResult) -> list[str]:
    """The human report of one device's self-check; each line starts with its JSON key.

    Copies are timed after the destination buffers were written once (their first-touch page
    faults are not copy time); ``kernel`` is the event-measured time, ``kernel_wall`` the host's.
    """
    head = f"{result.platform}:{result.index}  {result.device}"
    if result.status == "skipped":
        return [f"{head}: skipped: {result.reason}"]
    lines = [head]
    t, g = result.timings_ms, result.throughput_gbps
    nbytes = 4 * result.size
    if "alloc" in t:
        lines.append(f"  alloc     2 x {format_bytes(nbytes):>10}  {t['alloc']:9.3f} ms")
    if "program" in t:
        lines.append(f"  program   {'':>14}  {t['program']:9.3f} ms")
    if "copy_in" in t:
        lines.append(f"  copy_in   2 x {format_bytes(nbytes):>10}  {t['copy_in']:9.3f} ms  {g['copy_in']:7.2f} GB/s")
    if "kernel" in t:
        lines.append(f"  kernel    {result.size:>14}  {t['kernel']:9.3f} ms (events)  kernel_wall {t['kernel_wall']:.3f} ms")
    if "copy_out" in t:
        lines.append(f"  copy_out  1 x {format_bytes(nbytes):>10}  {t['copy_out']:9.3f} ms  {g['copy_out']:7.2f} GB/s")
    if result.status == "passed":
        lines.append(f"  verify    {'':>14}  {t.get('verify', 0.0):9.3f} ms  verified: {result.size} elements match")
    else:
        lines.append(f"  FAILED: {result.reason}")
    return lines


def _check_all(
    devices: Sequence[ol.Device], host: ol.Device | None, n: int, out: TextIO | None, progress: TextIO
) -> list[CheckResult]:
    """Check each device in turn. The text report (``out``; None for ``--json``, printed whole at
    the end) gets each device's lines as soon as it is done; a terminal on ``progress`` (stderr)
    is told which device is being checked, since a large ``--size`` takes seconds per device."""
    if out is not None:
        print(f"offload selfcheck: saxpy on {n} floats per device", file=out, flush=True)
    tell = progress.isatty()
    indices: dict[str, int] = {}
    results = []
    for position, device in enumerate(devices, 1):
        name = _platform_name(ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM))
        index = indices[name] = indices.get(name, -1) + 1
        if tell:
            print(f"offload selfcheck: checking {name}:{index} ({position} of {len(devices)})...", file=progress, flush=True)
        start = time.perf_counter()
        result = check_device(device, index, host, n)
        results.append(result)
        if tell:
            print(f"offload selfcheck: {name}:{index} {result.status} in {time.perf_counter() - start:.1f} s", file=progress, flush=True)
        if out is not None:
            print("\n".join(format_check(result)), file=out, flush=True)
    return results


def cmd_selfcheck(args: argparse.Namespace, out: TextIO) -> int:
    if args.size < 1:
        print(f"{_ERROR_PREFIX}--size must be at least 1, got {args.size}", file=sys.stderr)
        return EXIT_NOTHING
    limit = max_size()
    if args.size > limit:
        print(
            f"{_ERROR_PREFIX}--size {args.size} is too large: at most {limit} floats (32-bit global ids, and "
            f"about 6 x 4 x size bytes must fit in this machine's memory)",
            file=sys.stderr,
        )
        return EXIT_NOTHING
    with _session():
        devices = _devices()
        host = _host_device(devices)
        if args.platform is not None:
            names = sorted({_platform_name(p) for p, _ in _platforms(devices)})
            devices = [
                d for d in devices if _platform_name(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM)) == args.platform
            ]
            if not devices:
                known = ", ".join(names) or "none"
                why = platform_absence(args.platform)
                print(f"{_ERROR_PREFIX}no device of platform {args.platform!r}: {why} (platforms with devices: {known})", file=sys.stderr)
                return EXIT_NOTHING
        if not devices:
            print(f"{_ERROR_PREFIX}no devices found; see `offload backends`", file=sys.stderr)
            return EXIT_NOTHING
        results = _check_all(devices, host, args.size, None if args.json else out, sys.stderr)
    counts = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    if args.json:
        _print_json({"size": args.size, **counts, "devices": [asdict(r) for r in results]}, out)
    else:
        print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped", file=out)
    if counts["failed"]:
        return EXIT_FAILED
    if not counts["passed"]:
        print(f"{_ERROR_PREFIX}no device could be checked (every one was skipped)", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_OK
