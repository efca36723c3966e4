"""The ``offload`` command: inspect platforms, devices and backends, and run a self-check.

``offload devices [--json]``
    Every platform and every device with every ``DeviceInfo`` property (as
    llvm-offload-device-info prints them). A property that fails shows ``<error: CODE>``.
``offload backends [--json]``
    Every discovered backend: distribution, version, loaded or skipped (with the reason), devices.
``offload selfcheck [--json] [--platform NAME] [--size N]``
    A real job on every device: allocate, copy in, launch ``saxpy``, copy out, verify, time it.
    The program comes from the backend's conformance capabilities (entry-point group
    ``offload.conformance``); a backend without a saxpy binary is skipped, not failed.

Exit status: 0 success; 1 a device failed, or an API call failed; 2 nothing to do (no device,
no device of the selected platform, every device skipped) or a usage error.
Results go to stdout, errors to stderr. ``main`` balances its own ``olInit`` with ``olShutDown``.
"""

from __future__ import annotations

import argparse
import array
import contextlib
import enum
import functools
import inspect
import json
import math
import struct
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import offload as ol

CONFORMANCE_GROUP = "offload.conformance"
DEFAULT_SIZE = 1 << 20
SAXPY_A = 2.5
_ERROR_PREFIX = "offload: "

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_NOTHING = 2


# --- sessions ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _session() -> Iterator[None]:
    """``olInit`` … ``olShutDown``, balanced even when the body raises.

    Backend-skip warnings are silenced: the commands report skips themselves. A shutdown error is
    raised unless another exception is already on its way out (then it is printed to stderr).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ol.OffloadBackendWarning)
        ol.olInit()
    try:
        yield
    except BaseException:
        try:
            ol.olShutDown()
        except ol.OffloadError as error:
            print(f"{_ERROR_PREFIX}olShutDown failed: {error}", file=sys.stderr)
        raise
    ol.olShutDown()


def _devices() -> list[ol.Device]:
    found: list[ol.Device] = []

    def collect(device: ol.Device, _: object) -> bool:
        found.append(device)
        return True

    ol.olIterateDevices(collect)
    return found


def _platforms(devices: Sequence[ol.Device]) -> list[tuple[ol.Platform, list[ol.Device]]]:
    """The platforms of ``devices`` in first-seen order, each with its devices."""
    grouped: dict[int, tuple[ol.Platform, list[ol.Device]]] = {}
    for device in devices:
        platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
        grouped.setdefault(id(platform), (platform, []))[1].append(device)
    return list(grouped.values())


def _platform_name(platform: ol.Platform) -> str:
    return str(ol.olGetPlatformInfo(platform, ol.PlatformInfo.NAME))


# --- formatting (pure) -------------------------------------------------------------------------


@dataclass(frozen=True)
class PropertyError:
    """A property query that raised: shown as ``<error: CODE>``."""

    code: str
    details: str


def format_value(value: Any) -> str:
    """A property value for people: enum names without prefix, Dimensions as ``x,y,z``."""
    if isinstance(value, PropertyError):
        return f"<error: {value.code}>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.IntFlag):
        names = flag_names(value)
        return " | ".join(names) if names else "0"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, ol.Dimensions):
        return f"{value.x},{value.y},{value.z}"
    if isinstance(value, ol.Platform):
        return value.name
    return str(value)


def flag_names(value: enum.IntFlag) -> list[str]:
    """The names of the single-bit members set in ``value``, lowest bit first."""
    return [m.name for m in type(value) if m.value and (value & m.value) == m.value and m.name]


def json_value(value: Any) -> Any:
    """A property value for JSON: enums by name, flags as lists of names."""
    if isinstance(value, PropertyError):
        return {"error": value.code, "details": value.details}
    if isinstance(value, bool):
        return value
    if isinstance(value, enum.IntFlag):
        return flag_names(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, ol.Dimensions):
        return {"x": value.x, "y": value.y, "z": value.z}
    if isinstance(value, ol.Platform):
        return value.name
    return value


def format_table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as left-aligned columns (the last column is not padded)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [indent + "  ".join([*(c.ljust(w) for c, w in zip(row, widths)), row[-1]]).rstrip() for row in rows]


def gb_per_s(nbytes: int, seconds: float) -> float:
    """Throughput in GB/s (10^9 bytes), 0 for a zero or negative duration."""
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def format_bytes(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def _error_code(error: ol.OffloadError) -> str:
    return error.code.name


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats replaced by None (strict JSON has no Infinity/NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _print_json(document: Any, out: TextIO) -> None:
    json.dump(_finite(document), out, indent=2, allow_nan=False)
    out.write("\n")


# --- offload devices ---------------------------------------------------------------------------


def _query(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ol.OffloadError as error:
        return PropertyError(_error_code(error), error.details)


def _platform_properties(platform: ol.Platform) -> dict[str, Any]:
    return {p.name: _query(functools.partial(ol.olGetPlatformInfo, platform, p)) for p in ol.PlatformInfo}


def _device_properties(device: ol.Device) -> dict[str, Any]:
    return {p.name: _query(functools.partial(ol.olGetDeviceInfo, device, p)) for p in ol.DeviceInfo}


def cmd_devices(args: argparse.Namespace, out: TextIO) -> int:
    with _session():
        devices = _devices()
        listing = [
            (_platform_properties(platform), [_device_properties(d) for d in members])
            for platform, members in _platforms(devices)
        ]
    if args.json:
        document = {
            "platforms": [
                {
                    **{k: json_value(v) for k, v in props.items()},
                    "devices": [{"index": i, "info": {k: json_value(v) for k, v in d.items()}} for i, d in enumerate(devs)],
                }
                for props, devs in listing
            ]
        }
        _print_json(document, out)
    else:
        if not listing:
            print("No devices found.", file=out)
        for number, (props, devs) in enumerate(listing):
            print(f"Platform {number}: {format_value(props['NAME'])}", file=out)
            for line in format_table([(k, format_value(v)) for k, v in props.items() if k != "NAME"], "  "):
                print(line, file=out)
            for index, info in enumerate(devs):
                print(f"  Device {index}: {format_value(info['NAME'])}", file=out)
                for line in format_table([(k, format_value(v)) for k, v in info.items()], "    "):
                    print(line, file=out)
            print(file=out)
    return EXIT_OK if listing else EXIT_NOTHING


# --- offload backends --------------------------------------------------------------------------


def _status_document(status: ol.BackendStatus) -> dict[str, Any]:
    return asdict(status)


def format_backends(statuses: Sequence[ol.BackendStatus]) -> list[str]:
    """The human listing of ``offload backends``."""
    if not statuses:
        return ["No backends discovered (entry-point group offload.backends is empty)."]
    rows = [("NAME", "DISTRIBUTION", "VERSION", "STATUS", "DEVICES")]
    for s in statuses:
        rows.append(
            (
                s.name,
                s.distribution or "(in-process)",
                s.version or "-",
                "loaded" if s.loaded else "skipped",
                str(s.device_count),
            )
        )
    lines = format_table(rows)
    for s in statuses:
        if not s.loaded:
            lines.append(f"{s.name}: skipped: {s.reason or 'no reason given'}")
    return lines


def cmd_backends(args: argparse.Namespace, out: TextIO) -> int:
    with _session():
        statuses = ol.backend_status()
    if args.json:
        _print_json({"backends": [_status_document(s) for s in statuses]}, out)
    else:
        for line in format_backends(statuses):
            print(line, file=out)
    return EXIT_OK


# --- offload selfcheck -------------------------------------------------------------------------


def _capabilities(platform_name: str) -> Any | None:
    """The conformance capabilities object of a platform (None when it declares none).

    Raises whatever loading the entry point raises (an ImportError for a missing module).
    """
    from importlib.metadata import entry_points

    for ep in entry_points(group=CONFORMANCE_GROUP):
        if ep.name == platform_name:
            capabilities = ep.load()
            if inspect.isclass(capabilities):
                try:
                    return capabilities()
                except TypeError:  # binary() is a class or static method
                    return capabilities
            return capabilities
    return None


def _host_fallback_binary(name: str) -> bytes | None:
    """The host's shipped test kernel (until its conformance capabilities exist)."""
    try:
        from offload_host import build_test_kernel
    except ImportError:
        return None
    return build_test_kernel(name)


def program_binary(platform_name: str, backend: ol.PlatformBackend, name: str) -> bytes | None:
    """The program bytes holding kernel ``name`` for a platform, None when it has none.

    Asks the platform's ``offload.conformance`` capabilities (``binary(name)``, None: the
    platform has no such program). Only for the host platform, when it declares no capabilities
    or their module does not import, builds the shipped test kernel instead. An error raised while building a binary propagates (it is a failure, not a skip).
    """
    try:
        capabilities = _capabilities(platform_name)
    except ImportError:
        capabilities = None
    if capabilities is not None:
        binary = capabilities.binary(name)
        return None if binary is None else bytes(binary)
    if backend is ol.PlatformBackend.HOST:
        return _host_fallback_binary(name)
    return None


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

        start = time.perf_counter()
        program = ol.olCreateProgram(device, binary)
        cleanup.append(_destroyer(ol.olDestroyProgram, program))
        kernel = ol.olGetSymbol(program, "saxpy", ol.SymbolKind.KERNEL)
        t["load"] = (time.perf_counter() - start) * 1e3

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


def check_device(device: ol.Device, index: int, host: ol.Device | None, n: int) -> CheckResult:
    """Run the saxpy self-check on one device; never raises for an API failure."""
    platform = ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM)
    platform_name = _platform_name(platform)
    result = CheckResult(platform_name, str(_query(lambda: ol.olGetDeviceInfo(device, ol.DeviceInfo.NAME))), index, size=n)
    if host is None:
        result.reason = "no host platform is loaded, so host memory cannot be copied"
        return result
    try:
        binary = program_binary(platform_name, ol.olGetPlatformInfo(platform, ol.PlatformInfo.BACKEND), "saxpy")
    except Exception as error:  # noqa: BLE001 - a broken capabilities plugin fails this device only
        result.reason = f"could not get a saxpy binary: {error}"
        return result
    if binary is None:
        result.status, result.reason = "skipped", "no saxpy binary"
        return result
    try:
        _run_saxpy(device, host, binary, n, result)
    except ol.OffloadError as error:
        result.status, result.reason = "failed", str(error)
    return result


def format_check(result: CheckResult) -> list[str]:
    """The human report of one device's self-check."""
    head = f"{result.platform}:{result.index}  {result.device}"
    if result.status == "skipped":
        return [f"{head}: skipped: {result.reason}"]
    lines = [head]
    t, g = result.timings_ms, result.throughput_gbps
    nbytes = 4 * result.size
    if "alloc" in t:
        lines.append(f"  alloc      2 x {format_bytes(nbytes):>10}  {t['alloc']:9.3f} ms")
    if "load" in t:
        lines.append(f"  program    {'':>14}  {t['load']:9.3f} ms")
    if "copy_in" in t:
        lines.append(f"  copy in    2 x {format_bytes(nbytes):>10}  {t['copy_in']:9.3f} ms  {g['copy_in']:7.2f} GB/s")
    if "kernel" in t:
        lines.append(
            f"  saxpy      {result.size:>14}  {t['kernel']:9.3f} ms (events)  {t['kernel_wall']:.3f} ms wall"
        )
    if "copy_out" in t:
        lines.append(f"  copy out   1 x {format_bytes(nbytes):>10}  {t['copy_out']:9.3f} ms  {g['copy_out']:7.2f} GB/s")
    if result.status == "passed":
        lines.append(f"  verify     {'':>14}  {t.get('verify', 0.0):9.3f} ms  verified: {result.size} elements match")
    else:
        lines.append(f"  FAILED: {result.reason}")
    return lines


def cmd_selfcheck(args: argparse.Namespace, out: TextIO) -> int:
    if args.size < 1:
        print(f"{_ERROR_PREFIX}--size must be at least 1, got {args.size}", file=sys.stderr)
        return EXIT_NOTHING
    with _session():
        devices = _devices()
        host = _host_device(devices)
        if args.platform is not None:
            names = sorted({_platform_name(p) for p, _ in _platforms(devices)})
            devices = [d for d in devices if _platform_name(ol.olGetDeviceInfo(d, ol.DeviceInfo.PLATFORM)) == args.platform]
            if not devices:
                known = ", ".join(names) or "none"
                print(f"{_ERROR_PREFIX}no device of platform {args.platform!r} (platforms: {known})", file=sys.stderr)
                return EXIT_NOTHING
        if not devices:
            print(f"{_ERROR_PREFIX}no devices found; see `offload backends`", file=sys.stderr)
            return EXIT_NOTHING
        indices: dict[str, int] = {}
        results = []
        for device in devices:
            name = _platform_name(ol.olGetDeviceInfo(device, ol.DeviceInfo.PLATFORM))
            index = indices[name] = indices.get(name, -1) + 1
            results.append(check_device(device, index, host, args.size))
    counts = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    if args.json:
        _print_json({"size": args.size, **counts, "devices": [asdict(r) for r in results]}, out)
    else:
        print(f"offload selfcheck: saxpy on {args.size} floats per device", file=out)
        for r in results:
            print("\n".join(format_check(r)), file=out)
        print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped", file=out)
    if counts["failed"]:
        return EXIT_FAILED
    if not counts["passed"]:
        print(f"{_ERROR_PREFIX}no device could be checked (every one was skipped)", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_OK


# --- entry point -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offload", description="Inspect and check offload platforms and devices.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    devices = commands.add_parser("devices", help="list every platform and device with every property")
    devices.add_argument("--json", action="store_true", help="print a JSON document")
    devices.set_defaults(run=cmd_devices)

    backends = commands.add_parser("backends", help="list discovered backends: loaded or skipped, and why")
    backends.add_argument("--json", action="store_true", help="print a JSON document")
    backends.set_defaults(run=cmd_backends)

    selfcheck = commands.add_parser("selfcheck", help="run and verify a saxpy job on every device")
    selfcheck.add_argument("--json", action="store_true", help="print a JSON document")
    selfcheck.add_argument("--platform", metavar="NAME", help="check only the devices of this platform")
    selfcheck.add_argument("--size", type=int, default=DEFAULT_SIZE, metavar="N", help="floats per vector (default 2**20)")
    selfcheck.set_defaults(run=cmd_selfcheck)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``offload`` command with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error already printed by argparse
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else EXIT_NOTHING
    try:
        return int(args.run(args, sys.stdout))
    except ol.OffloadError as error:
        print(f"{_ERROR_PREFIX}{error}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `offload devices | head`
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
