"""What one offload process per device costs, measured here and extrapolated to 8 GPUs per node
and 1000 nodes (docs/scaling.md quotes a run of this script).

Measured on this machine's host device, each figure in fresh processes (medians of interleaved
repeats, the peer first, then offload, the order reversed every other round):

- process: a bare ``python -c 'import numpy'`` (the peer) vs. a process that imports offload,
  initialises it, takes ``default_device()``, allocates, runs a queue (RSS, peak RSS, wall time from
  spawn to exit; and inside it the time of ``import offload`` and of the first ``default_device()``);
- trace: a loop of saxpy launch + 4 KiB copy back + sync, traced (``OFFLOAD_TRACE=perfetto``) and
  not: iterations per second, trace bytes per iteration, trace bytes per second at that rate;
- merge: ``offload trace merge`` of RANKS copies of that trace (as RANKS ranks): MB/s, peak RSS.

Then the extrapolation: per node (8 ranks) and per job (8000 ranks), for memory, start-up and trace
volume, at the measured maximum rate and at 1000 iterations per second.

    .venv/bin/python benchmarks/bench_scale.py [--quick] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import bench_arguments

RANKS_PER_NODE = 8
NODES = 1000
STEADY_RATE = 1000.0  # iterations (launch + copy + sync) per second, a busy but not launch-bound rank

_PEER = r"""
import json, resource, sys
import numpy
print(json.dumps({"rss_kib": int(open('/proc/self/statm').read().split()[1]) * 4, "hwm_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_OFFLOAD = r"""
import json, resource, time
import numpy as np
t0 = time.perf_counter()
import offload, offload_host
t1 = time.perf_counter()
device = offload.default_device()
t2 = time.perf_counter()
x = offload.to_device(np.arange(1 << 16, dtype=np.float32), device)
with device.load_program(offload_host.build_test_kernel("saxpy")) as program, device.queue() as queue:
    saxpy = program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n")
    queue.launch(saxpy, 256, 256, np.float32(2), x, x, x.size)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "init_s": t2 - t1, "first_job_s": t3 - t2,
                  "rss_kib": int(open('/proc/self/statm').read().split()[1]) * 4, "hwm_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_LOOP = r"""
import json, sys, time
import numpy as np
import offload, offload_host
iterations = int(sys.argv[1])
device = offload.default_device()
x = offload.to_device(np.arange(1024, dtype=np.float32), device)
y = offload.to_device(np.ones(1024, dtype=np.float32), device)
host = np.empty(1024, dtype=np.float32)
with device.load_program(offload_host.build_test_kernel("saxpy")) as program, device.queue() as queue:
    saxpy = program.kernel("saxpy", "float a, const float *x, float *y, uint64_t n")
    start = time.perf_counter()
    for _ in range(iterations):
        queue.launch(saxpy, 4, 256, np.float32(2), x, y, 1024)
        y.buffer.copy_to(host, queue=queue)
        queue.sync()
    elapsed = time.perf_counter() - start
print(json.dumps({"iterations": iterations, "seconds": elapsed}))
"""

_MERGE = r"""
import json, resource, sys, time
from offload.cli import main
files, out = sys.argv[1:-1], sys.argv[-1]
start = time.perf_counter()
status = main(["trace", "merge", *files, "-o", out])
print(json.dumps({"status": status, "seconds": time.perf_counter() - start, "hwm_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "OMPI_", "PMI_", "SLURM_"))}
    env["OFFLOAD_BACKENDS"] = "host"
    env.update(extra)
    return env


def _child(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env or _env(), timeout=600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def measure_process(repeats: int) -> dict[str, Any]:
    peer: list[tuple[dict[str, Any], float]] = []
    ours: list[tuple[dict[str, Any], float]] = []
    _child(_OFFLOAD)  # builds (and caches) the saxpy program once, outside the timing
    for round_ in range(repeats):
        order = [(_PEER, peer), (_OFFLOAD, ours)]
        for code, into in order if round_ % 2 == 0 else reversed(order):
            into.append(_child(code))

    def med(rows: list[tuple[dict[str, Any], float]], key: str) -> float:
        return statistics.median(r[0][key] if key != "wall_s" else r[1] for r in rows)

    result = {
        "peer_rss_kib": med(peer, "rss_kib"),
        "peer_hwm_kib": med(peer, "hwm_kib"),
        "peer_wall_s": med(peer, "wall_s"),
        "rss_kib": med(ours, "rss_kib"),
        "hwm_kib": med(ours, "hwm_kib"),
        "wall_s": med(ours, "wall_s"),
        "import_s": med(ours, "import_s"),
        "init_s": med(ours, "init_s"),
        "first_job_s": med(ours, "first_job_s"),
    }
    result["rss_ratio"] = result["rss_kib"] / result["peer_rss_kib"]
    result["wall_ratio"] = result["wall_s"] / result["peer_wall_s"]
    return result


def measure_trace(iterations: int, repeats: int, workdir: Path) -> dict[str, Any]:
    plain: list[float] = []
    traced: list[float] = []
    sizes: list[int] = []
    events: list[int] = []
    path = workdir / "rank0.json"
    for round_ in range(repeats):
        for kind in ("plain", "traced") if round_ % 2 == 0 else ("traced", "plain"):
            if kind == "plain":
                out, _ = _child(_LOOP, str(iterations))
                plain.append(out["iterations"] / out["seconds"])
            else:
                out, _ = _child(_LOOP, str(iterations), env=_env(OFFLOAD_TRACE=f"perfetto:{path}", PMI_RANK="0"))
                traced.append(out["iterations"] / out["seconds"])
                sizes.append(path.stat().st_size)
                events.append(len(json.loads(path.read_text())["traceEvents"]))
    per_iteration = statistics.median(sizes) / iterations
    rate = statistics.median(traced)
    return {
        "iterations": iterations,
        "plain_per_s": statistics.median(plain),
        "traced_per_s": rate,
        "traced_slowdown": statistics.median(plain) / rate,
        "file_bytes": statistics.median(sizes),
        "events": statistics.median(events),
        "bytes_per_iteration": per_iteration,
        "bytes_per_event": statistics.median(sizes) / statistics.median(events),
        "bytes_per_s_max": per_iteration * rate,
        "bytes_per_s_steady": per_iteration * STEADY_RATE,
        "file": str(path),
    }


def measure_merge(trace_file: Path, ranks: int, workdir: Path) -> dict[str, Any]:
    document = json.loads(trace_file.read_text())
    files = []
    for rank in range(ranks):
        document["otherData"]["rank"] = rank
        target = workdir / f"merge-rank{rank}.json"
        target.write_text(json.dumps(document, separators=(",", ":")))
        files.append(str(target))
    total = sum(Path(f).stat().st_size for f in files)
    out, _ = _child(_MERGE, *files, str(workdir / "job.json"))
    if out["status"] != 0:
        raise SystemExit("offload trace merge failed")
    return {"ranks": ranks, "input_bytes": total, "seconds": out["seconds"], "mb_per_s": total / out["seconds"] / 1e6,
            "hwm_kib": out["hwm_kib"], "output_bytes": (workdir / "job.json").stat().st_size}


def extrapolate(process: dict[str, Any], trace: dict[str, Any], merge: dict[str, Any]) -> dict[str, Any]:
    ranks = RANKS_PER_NODE * NODES
    merge_s_per_byte = merge["seconds"] / merge["input_bytes"]
    merge_hwm_per_byte = merge["hwm_kib"] * 1024 / merge["input_bytes"]
    per_rank_minute_steady = trace["bytes_per_s_steady"] * 60
    return {
        "ranks": ranks,
        "node_rss_gib": process["rss_kib"] * RANKS_PER_NODE / 2**20,
        "node_offload_rss_gib": (process["rss_kib"] - process["peer_rss_kib"]) * RANKS_PER_NODE / 2**20,
        "job_start_s": process["import_s"] + process["init_s"],  # the ranks start in parallel
        "rank_trace_mb_per_s_max": trace["bytes_per_s_max"] / 1e6,
        "rank_trace_mb_per_s_steady": trace["bytes_per_s_steady"] / 1e6,
        "node_trace_mb_per_s_steady": trace["bytes_per_s_steady"] * RANKS_PER_NODE / 1e6,
        "job_trace_gb_per_s_steady": trace["bytes_per_s_steady"] * ranks / 1e9,
        "job_trace_gb_per_minute_steady": per_rank_minute_steady * ranks / 1e9,
        "merge_node_minute_s": per_rank_minute_steady * RANKS_PER_NODE * merge_s_per_byte,
        "merge_node_minute_gib": per_rank_minute_steady * RANKS_PER_NODE * merge_hwm_per_byte / 2**30,
        "merge_job_minute_h": per_rank_minute_steady * ranks * merge_s_per_byte / 3600,
        "merge_job_minute_tib": per_rank_minute_steady * ranks * merge_hwm_per_byte / 2**40,
    }


def report(results: dict[str, Any]) -> None:
    p, t, m, x = results["process"], results["trace"], results["merge"], results["extrapolated"]
    print("one offload process (host device), fresh processes, medians")
    print(f"  RSS              {p['rss_kib'] / 1024:8.1f} MiB   (python + numpy alone: {p['peer_rss_kib'] / 1024:.1f} MiB; ratio {p['rss_ratio']:.2f}x)")
    print(f"  peak RSS         {p['hwm_kib'] / 1024:8.1f} MiB   (python + numpy alone: {p['peer_hwm_kib'] / 1024:.1f} MiB)")
    print(f"  import offload   {p['import_s'] * 1e3:8.1f} ms")
    print(f"  default_device() {p['init_s'] * 1e3:8.1f} ms   (olInit, backend discovery, device info)")
    print(f"  first job        {p['first_job_s'] * 1e3:8.1f} ms   (alloc, cached program load, one launch)")
    print(f"  spawn to exit    {p['wall_s'] * 1e3:8.1f} ms   (python + numpy alone: {p['peer_wall_s'] * 1e3:.1f} ms; ratio {p['wall_ratio']:.2f}x)")
    print(f"trace: {t['iterations']} x (launch + 4 KiB copy + sync)")
    print(f"  untraced {t['plain_per_s']:10.0f} it/s   traced {t['traced_per_s']:10.0f} it/s   (traced / untraced time: {t['traced_slowdown']:.2f}x)")
    print(f"  file {t['file_bytes'] / 1e3:.1f} kB, {t['events']:.0f} events: {t['bytes_per_iteration']:.0f} B per iteration, {t['bytes_per_event']:.0f} B per event")
    print(f"  per rank: {t['bytes_per_s_max'] / 1e6:.2f} MB/s at the traced maximum, {t['bytes_per_s_steady'] / 1e6:.2f} MB/s at {STEADY_RATE:.0f} it/s")
    print(f"merge: {m['ranks']} ranks, {m['input_bytes'] / 1e6:.1f} MB in {m['seconds']:.2f} s = {m['mb_per_s']:.1f} MB/s, peak RSS {m['hwm_kib'] / 1024:.0f} MiB")
    print(f"extrapolated to {RANKS_PER_NODE} ranks per node x {NODES} nodes = {x['ranks']} ranks (at {STEADY_RATE:.0f} it/s per rank)")
    print(f"  memory per node      {x['node_rss_gib']:.2f} GiB host RSS ({x['node_offload_rss_gib']:.2f} GiB of it offload's), before any driver context")
    print(f"  start-up             {x['job_start_s'] * 1e3:.0f} ms per rank, in parallel (launcher and MPI_Init not included)")
    print(f"  trace per node       {x['node_trace_mb_per_s_steady']:.1f} MB/s;  per job {x['job_trace_gb_per_s_steady']:.2f} GB/s = {x['job_trace_gb_per_minute_steady']:.0f} GB per minute")
    print(f"  merging a minute     one node: {x['merge_node_minute_s']:.0f} s, {x['merge_node_minute_gib']:.1f} GiB;  whole job: {x['merge_job_minute_h']:.1f} h, {x['merge_job_minute_tib']:.1f} TiB (not practical: merge a node or a few ranks)")


def main() -> None:
    parser = bench_arguments(__doc__, "tiny counts: a smoke run", strict=None)
    args = parser.parse_args()
    repeats, iterations, ranks = (1, 50, 2) if args.quick else (5, 2000, 8)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        workdir = Path(tmp)
        process = measure_process(repeats)
        trace = measure_trace(iterations, max(1, repeats - 2), workdir)
        merge = measure_merge(Path(trace.pop("file")), ranks, workdir)
    results = {"process": process, "trace": trace, "merge": merge, "extrapolated": extrapolate(process, trace, merge)}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)


if __name__ == "__main__":
    main()
