"""offload's C ABI (offload-capi's libLLVMOffload.so) against its peers, in one run.

Sections (each variant runs in interleaved repeats, in fresh processes where it starts a library,
and reports medians):

* init     the first ``olInit`` of a C program through offload's library (interpreter start, imports,
           every installed backend loaded and initialised) with no device driver to be found (as
           bench_startup.py: ``LD_LIBRARY_PATH`` the library's folder alone, ``OCL_ICD_VENDORS`` an
           empty folder), and through LLVM 22's liboffload (its plugins, no driver either) where
           Debian's package was unpacked by the tests (``~/.cache/offload-tests/liboffload-22``).
           Target: <= 100 ms. Also, for information: the CPU time of that olInit (what a loaded
           machine's time-sharing adds is not in it), offload's with the drivers this machine has
           (the system's OpenCL ICDs: PoCL's own start-up), and the backends loaded.
* info     ``olGetDeviceInfo(TYPE)`` through the C ABI (answered from C), through liboffload 22, and
           through the Python flat API. Target: <= 1 us per call.
* launch   an enqueued ``olLaunchKernel`` of the host backend's no-op ``noargs`` kernel through the C
           ABI against the same through the Python flat API (N launches, one ``olSyncQueue``,
           amortised). Target: C / Python <= 1.0.

Usage: ``python benchmarks/bench_capi.py [--quick] [--json] [--strict]``; needs offload-capi
installed and a C compiler (else it says so and exits 0). Ratios and figures only: no timed asserts.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import bench_arguments

HERE = Path(__file__).resolve().parent
TARGET_INIT_MS = 100.0
TARGET_INFO_NS = 1000.0
TARGET_LAUNCH_RATIO = 1.0
DEBIAN = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "offload-tests/liboffload-22/usr/lib/x86_64-linux-gnu"


def _python_side(image: Path, info_calls: int, launches: int) -> tuple[float, float]:
    """(olGetDeviceInfo ns/call, enqueued olLaunchKernel ns/launch) through the Python flat API, in a
    fresh interpreter (as the C side runs in a fresh process)."""
    code = f"""
import time, offload as ol
ol.olInit()
devs = []
ol.olIterateDevices(lambda d, _: devs.append(d) or True)
host = [d for d in devs if d.platform.kind is ol.PlatformBackend.HOST][0]
info, T = ol.olGetDeviceInfo, ol.DeviceInfo.TYPE
info(devs[0], T)
t = time.perf_counter_ns()
for _ in range({info_calls}):
    info(devs[0], T)
info_ns = (time.perf_counter_ns() - t) / {info_calls}
program = ol.olCreateProgram(host, open({str(image)!r}, "rb").read())
kernel = ol.olGetSymbol(program, "noargs", ol.SymbolKind.KERNEL)
queue, grid, launch = ol.olCreateQueue(host), ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1)), ol.olLaunchKernel
launch(queue, host, kernel, None, grid); ol.olSyncQueue(queue)
t = time.perf_counter_ns()
for _ in range({launches}):
    launch(queue, host, kernel, None, grid)
ol.olSyncQueue(queue)
print(info_ns, (time.perf_counter_ns() - t) / {launches})
ol.olDestroyQueue(queue); ol.olDestroyProgram(program); ol.olShutDown()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def _c(program: Path, libdir: Path, *args: str, drivers: bool = False) -> list[float]:
    """One fresh run of ``program`` on ``libdir``'s library: its numbers. Without ``drivers``, no
    device driver can be found (``OCL_ICD_VENDORS``: an empty folder; ``LD_LIBRARY_PATH``: ``libdir``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OFFLOAD_BACKENDS", "OFFLOAD_TRACE", "OCL_ICD_VENDORS")}
    env["LD_LIBRARY_PATH"] = str(libdir)
    if not drivers:
        env["OCL_ICD_VENDORS"] = str(program.parent / "no-icd-vendors")
    elif "OCL_ICD_VENDORS" in os.environ:  # the environment's own choice of OpenCL drivers
        env["OCL_ICD_VENDORS"] = os.environ["OCL_ICD_VENDORS"]
    proc = subprocess.run([str(program), *args], capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{program.name} {' '.join(args)}: {proc.stderr.strip()[-500:]}")
    return [float(x) for x in proc.stdout.split()]


def _backends(work: Path) -> dict[str, int]:
    """The backends offload loads in a driverless process (as ``init`` runs): name -> devices."""
    code = "import offload, json; offload.olInit(); print(json.dumps({s.name: s.device_count for s in offload.backend_status() if s.loaded}))"
    env = {k: v for k, v in os.environ.items() if k not in ("OFFLOAD_BACKENDS", "OFFLOAD_TRACE", "LD_LIBRARY_PATH")}
    env["OCL_ICD_VENDORS"] = str(work / "no-icd-vendors")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def measure(quick: bool) -> dict[str, Any]:
    import offload_capi
    from offload_host import build_test_kernel

    repeats, info_calls, launches = (2, 2000, 200) if quick else (7, 200000, 5000)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return {"skipped": "no C compiler"}
    work = Path(tempfile.mkdtemp(prefix="bench-capi-"))
    program, image = work / "capi_bench", work / "noargs.bin"
    (work / "no-icd-vendors").mkdir()
    subprocess.run([cc, "-O2", f"-I{offload_capi.includedir()}", str(HERE / "capi_bench.c"), "-o", str(program),
                    f"-L{offload_capi.libdir()}", "-lLLVMOffload"], check=True)
    image.write_bytes(build_test_kernel("noargs"))
    ours, real = offload_capi.libdir(), DEBIAN if (DEBIAN / "libLLVMOffload.so.22.1").is_file() else None
    samples: dict[str, list[float]] = {k: [] for k in (
        "init_ms", "init_cpu_ms", "init_drivers_ms", "real_init_ms", "info_ns", "real_info_ns", "python_info_ns", "launch_ns",
        "python_launch_ns")}
    for round_ in range(repeats):
        variants = ["c", "python", "real"] if round_ % 2 == 0 else ["real", "python", "c"]
        for variant in variants:
            if variant == "c":
                wall, cpu = _c(program, ours, "init")
                samples["init_ms"].append(wall)
                samples["init_cpu_ms"].append(cpu)
                samples["init_drivers_ms"].append(_c(program, ours, "init", drivers=True)[0])
                samples["info_ns"].append(_c(program, ours, "info", str(info_calls))[0])
                samples["launch_ns"].append(_c(program, ours, "launch", str(image), str(launches))[0])
            elif variant == "python":
                info_ns, launch_ns = _python_side(image, info_calls, launches)
                samples["python_info_ns"].append(info_ns)
                samples["python_launch_ns"].append(launch_ns)
            elif real is not None:
                samples["real_init_ms"].append(_c(program, real, "init")[0])
                samples["real_info_ns"].append(_c(program, real, "info", str(info_calls))[0])
    med = {k: statistics.median(v) for k, v in samples.items() if v}
    ratios = [c / p for c, p in zip(samples["launch_ns"], samples["python_launch_ns"])]
    med["launch_ratio"] = statistics.median(ratios)
    med["backends"] = _backends(work)
    med["targets"] = {
        "init_ms <= 100": med["init_ms"] <= TARGET_INIT_MS,
        "info_ns <= 1000": med["info_ns"] <= TARGET_INFO_NS,
        "launch C / Python <= 1.0": med["launch_ratio"] <= TARGET_LAUNCH_RATIO,
    }
    shutil.rmtree(work, ignore_errors=True)
    return med


def main() -> int:
    parser = bench_arguments(__doc__, "tiny counts: a smoke run")
    args = parser.parse_args()
    try:
        import offload_capi

        offload_capi.library()
    except (ImportError, FileNotFoundError) as exc:
        print(f"bench_capi: offload-capi is not installed ({exc}); nothing measured")
        return 0
    started = time.perf_counter()
    result = measure(args.quick)
    if args.json:
        print(json.dumps(result))
        return 0
    if "skipped" in result:
        print(f"bench_capi: skipped: {result['skipped']}")
        return 0
    real = lambda key, unit: f"{result[key]:10.3f} {unit}" if key in result else "  (liboffload 22 not unpacked)"
    print(f"init (first olInit of a C program; backends: {', '.join(result['backends'])}; no driver found)")
    print(f"  offload C ABI             {result['init_ms']:10.1f} ms    target <= {TARGET_INIT_MS:.0f} ms")
    print(f"  liboffload 22             {real('real_init_ms', 'ms')}")
    print(f"  offload C ABI, its CPU time (a loaded machine's waits left out) {result['init_cpu_ms']:6.1f} ms")
    print(f"  offload C ABI, with this machine's drivers (information) {result['init_drivers_ms']:6.1f} ms")
    print("info (olGetDeviceInfo TYPE)")
    print(f"  offload C ABI             {result['info_ns']:10.1f} ns    target <= {TARGET_INFO_NS:.0f} ns")
    print(f"  liboffload 22             {real('real_info_ns', 'ns')}")
    print(f"  offload Python flat API   {result['python_info_ns']:10.1f} ns")
    print("launch (enqueued olLaunchKernel of noargs, amortised)")
    print(f"  offload C ABI             {result['launch_ns']:10.1f} ns")
    print(f"  offload Python flat API   {result['python_launch_ns']:10.1f} ns")
    print(f"  C / Python                {result['launch_ratio']:10.2f} x     target <= {TARGET_LAUNCH_RATIO:.1f}")
    print("summary")
    for name, ok in result["targets"].items():
        print(f"  {'PASS' if ok else 'MISS'}  {name}")
    print(f"({time.perf_counter() - started:.1f} s)")
    return 1 if getattr(args, "strict", False) and not all(result["targets"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
