"""What `import offload; offload.olInit()` costs in a fresh process with no GPU driver.

Each sample is one fresh child process that times, with ``perf_counter``, ``import offload`` and
then ``offload.olInit()`` with every installed backend (``OFFLOAD_BACKENDS`` unset) and with the
host backend alone (``OFFLOAD_BACKENDS=host``: the floor the GPU backends add to), interleaved
(the order reversed every other round), with ``LD_LIBRARY_PATH`` emptied and ``OCL_ICD_VENDORS``
an empty folder so that no simulated or real driver is found (PoCL's own start-up is the driver's). It also reports whether ``cuda.bindings`` or hip-python were imported, the
devices each backend found and the reason it gives for none. Target: every backend <= 100 ms.

    .venv/bin/python benchmarks/bench_startup.py [--quick] [--json] [--strict]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from _measure import bench_arguments

TARGET_S = 0.100

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import offload
imported = time.perf_counter()
offload.olInit()
initialised = time.perf_counter()
status = {s.name: [s.device_count, s.note] for s in offload.backend_status()}
offload.olShutDown()
heavy = sorted(m for m in ("cuda.bindings.driver", "cuda.bindings", "hip", "rocm.bindings.hip") if m in sys.modules)
print(json.dumps({"import_s": imported - start, "init_s": initialised - imported,
                  "total_s": initialised - start, "heavy_modules": heavy, "backends": status}))
"""


NO_ICD_VENDORS = os.path.join(tempfile.gettempdir(), f"offload-bench-no-icd-vendors-{os.getuid()}")


def child_env(backends: str | None) -> dict[str, str]:
    """The environment of a sample: no driver search path (nor OpenCL ICD), the backend selection."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "OFFLOAD_BACKENDS", "OFFLOAD_TRACE")}
    env["LD_LIBRARY_PATH"] = ""
    os.makedirs(NO_ICD_VENDORS, exist_ok=True)
    env["OCL_ICD_VENDORS"] = NO_ICD_VENDORS
    if backends is not None:
        env["OFFLOAD_BACKENDS"] = backends
    return env


def sample(backends: str | None) -> dict[str, Any]:
    """One fresh process's figures (its JSON line)."""
    proc = subprocess.run([sys.executable, "-c", CHILD], env=child_env(backends), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench_startup: the child failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(repeats: int) -> dict[str, Any]:
    """Interleaved samples of every backend and of the host alone; medians and the last details."""
    variants = {"all backends": None, "host only": "host"}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    order = list(variants)
    for round_ in range(repeats):
        for name in order if round_ % 2 == 0 else reversed(order):
            rows[name].append(sample(variants[name]))
    result: dict[str, Any] = {}
    for name, samples in rows.items():
        result[name] = {
            key: statistics.median(s[key] for s in samples) for key in ("import_s", "init_s", "total_s")
        } | {"heavy_modules": samples[-1]["heavy_modules"], "backends": samples[-1]["backends"]}
    result["target_s"] = TARGET_S
    result["passed"] = result["all backends"]["total_s"] <= TARGET_S
    return result


def report(result: dict[str, Any]) -> None:
    for name in ("all backends", "host only"):
        r = result[name]
        print(f"{name:13s} import {r['import_s'] * 1e3:6.1f} ms  olInit {r['init_s'] * 1e3:6.1f} ms"
              f"  total {r['total_s'] * 1e3:6.1f} ms  GPU bindings imported: {r['heavy_modules'] or 'none'}")
    for backend, (count, note) in result["all backends"]["backends"].items():
        print(f"  {backend}: {count} device(s){': ' + note if note else ''}")
    verdict = "PASS" if result["passed"] else "FAIL"
    print(f"{verdict}: import + olInit with every backend {result['all backends']['total_s'] * 1e3:.1f} ms"
          f" (target <= {TARGET_S * 1e3:.0f} ms)")


def main() -> None:
    parser = bench_arguments(__doc__, "two samples each (a smoke run)", strict="exit 1 when the target is missed")
    parser.add_argument("--repeats", type=int, default=None, help="samples per variant (default 15)")
    args = parser.parse_args()
    result = measure(args.repeats or (2 if args.quick else 15))
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        report(result)
    if args.strict and not result["passed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
