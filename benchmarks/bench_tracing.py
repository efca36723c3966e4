"""What tracing costs: per mode, an enqueued no-op host launch with one argument and
``olGetDeviceInfo(NAME)``, against no tracing and against LLVM liboffload 22's own trace.

Modes (each measured in a fresh child process, since ``OFFLOAD_TRACE`` is read at ``olInit``):
``off``; ``text`` (``OFFLOAD_TRACE=1``, stderr to /dev/null); ``json`` (``OFFLOAD_TRACE=json``,
stderr to /dev/null); ``timeline`` (``OFFLOAD_TRACE=perfetto:FILE.pftrace``, Perfetto's binary
trace) and ``timeline-json`` (``perfetto:FILE.json``, the trace-event JSON option). A sample is ns per call
of a loop (launches: ``n`` launches then one ``olSyncQueue``), the best of 3 in a child; the
children of all modes run interleaved, round after round, and each mode's cost added to the
untraced child of the same round is the median over rounds of the difference.

It also measures the timeline file's bytes per API call; the memory growth (VmRSS) of a process
making 10^6 traced calls (``--quick``: 2*10^4) after a warm-up of 10^4; and ``offload trace
merge``'s throughput on two ranks' files (MB of input per second, in-process).

The peer is LLVM's liboffload 22 (Debian's ``liboffload-22``, ``libllvm22``, ``liboffload-22-dev``,
fetched with ``apt-get download`` and unpacked with ``dpkg -x`` into a cache folder, never
installed): ``_peer_trace.c``, built against its ``offload/OffloadAPI.h``, times
``olGetDeviceInfo(NAME)`` on liboffload's host device with ``OFFLOAD_TRACE`` unset and ``=1``
(stderr to /dev/null), once in every round beside the children (the machine's load drifts: the
text trace is compared with the peer of its own round, the median of the rounds' ratios). Where apt, dpkg, the network or a C compiler is missing it is skipped and
the reason printed.

Targets (issue 31): the timeline adds <= 1 us per enqueued launch; the text trace adds no more per
line than liboffload 22's does; the timeline file takes <= 100 bytes per API call; memory grows by
<= 16 MiB over 10^6 traced calls; merge >= 100 MB/s.

    .venv/bin/python benchmarks/bench_tracing.py [--quick] [--json] [--strict]
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from _measure import Check, bench_arguments, exit_on_error, finish, log, no_gc, rss_kib

HERE = pathlib.Path(__file__).resolve().parent
PEER_SOURCE = HERE / "_peer_trace.c"
PEER_PACKAGES = ("liboffload-22", "libllvm22", "liboffload-22-dev")
TARGET_TIMELINE_NS = 1000.0
TARGET_BYTES_PER_CALL = 100.0
TARGET_GROWTH_KIB = 16 * 1024
TARGET_MERGE_MB_S = 100.0

KERNEL = r"""
#include <offload_host.h>
struct one_args { uint32_t *out; };
OFFLOAD_KERNEL_PARAMS(one, struct one_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(one) { (void)offload_args_; (void)offload_group_; }
"""


@dataclass
class Config:
    calls: int  # calls per sample
    rounds: int
    file_calls: int  # launches in the bytes-per-call run
    growth_calls: int
    merge_launches: int  # launches per rank file of the merge run
    peer_calls: int


FULL = Config(calls=20_000, rounds=5, file_calls=20_000, growth_calls=1_000_000, merge_launches=50_000, peer_calls=100_000)
QUICK = Config(calls=500, rounds=2, file_calls=500, growth_calls=20_000, merge_launches=500, peer_calls=2_000)
MODES = {"off": None, "text": "1", "json": "json", "timeline": "perfetto:{file}", "timeline-json": "perfetto:{file}"}
SUFFIX = {"timeline-json": ".json"}  # the file's name says its form: .json, else Perfetto's binary trace


# --- the child: one mode in one process ---------------------------------------------------------


def child(task: str, calls: int, rounds: int) -> dict[str, Any]:
    """Run in a child whose OFFLOAD_TRACE is set: ``times`` (per-call ns of both calls),
    ``file`` (make ``calls`` launches and as many queries, then shut down), ``growth``."""
    import offload as ol
    from offload_host import build_program

    ol.olInit()
    made = 1
    found: list[Any] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    made += 1
    device = None
    for candidate in found:
        made += 2
        if ol.olGetPlatformInfo(ol.olGetDeviceInfo(candidate, ol.DeviceInfo.PLATFORM), ol.PlatformInfo.BACKEND) == ol.PlatformBackend.HOST:
            device = candidate
            break
    if device is None:
        raise SystemExit("bench_tracing: no host device (is offload-host installed?)")
    program = ol.olCreateProgram(device, build_program(KERNEL, name="one"))
    kernel = ol.olGetSymbol(program, "one", ol.SymbolKind.KERNEL)
    size = ol.KernelLaunchSizeArgs(1, (1, 1, 1), (1, 1, 1))
    buffer = ol.olMemAlloc(device, ol.AllocType.DEVICE, 64)
    args = buffer.to_bytes(8, "little")
    queue = ol.olCreateQueue(device)
    made += 5
    launch, sync, info, name = ol.olLaunchKernel, ol.olSyncQueue, ol.olGetDeviceInfo, ol.DeviceInfo.NAME

    def launches(n: int) -> None:
        for _ in range(n):
            launch(queue, device, kernel, args, size)
        sync(queue)

    def queries(n: int) -> None:
        for _ in range(n):
            info(device, name)

    out: dict[str, Any] = {}
    launches(100)
    queries(100)
    made += 201
    if task == "times":
        samples: dict[str, list[float]] = {"launch_ns": [], "info_ns": []}
        for _ in range(rounds):
            for key, body in (("launch_ns", launches), ("info_ns", queries)):
                with no_gc():
                    start = time.perf_counter_ns()
                    body(calls)
                    samples[key].append((time.perf_counter_ns() - start) / calls)
        out = {key: min(values) for key, values in samples.items()}
    elif task == "file":
        launches(calls)
        queries(calls)
        made += 2 * calls + 1
    elif task == "growth":
        warm = 10_000
        launches(warm // 2)
        queries(warm // 2)
        before = rss_kib()
        step = 1000
        done = 0
        while done < calls:
            launches(step // 2)
            queries(step // 2)
            done += step
        out = {"calls": done, "rss_before_kib": before, "rss_after_kib": rss_kib()}
    ol.olDestroyQueue(queue)
    ol.olMemFree(buffer)
    ol.olDestroyProgram(program)
    ol.olShutDown()
    out["api_calls"] = made + 5
    return out


def run_child(mode: str, task: str, calls: int, rounds: int, file: str, rank: int | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_") and k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK")}
    setting = MODES[mode]
    if setting is not None:
        env["OFFLOAD_TRACE"] = setting.format(file=file)
    env["OFFLOAD_BACKENDS"] = "host"
    if rank is not None:
        env["OMPI_COMM_WORLD_RANK"] = str(rank)
        env["OMPI_COMM_WORLD_SIZE"] = "2"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", task, str(calls), str(rounds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if mode in ("text", "json") else subprocess.PIPE,
        text=True,
        env=env,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the {mode} child ({task}) failed: {(proc.stderr or '').strip()[-400:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- the peer: liboffload 22 --------------------------------------------------------------------


def _peer_root() -> tuple[pathlib.Path | None, str]:
    """The unpacked packages' root (downloaded once into the cache), or None and why not."""
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "offload-bench" / "liboffload-22"
    header = cache / "usr" / "lib" / "llvm-22" / "include" / "offload" / "OffloadAPI.h"
    if header.is_file() and list((cache / "usr" / "lib" / "x86_64-linux-gnu").glob("libLLVM.so.22*")):
        return cache, ""
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        return None, "no apt-get/dpkg on this machine"
    with tempfile.TemporaryDirectory() as download:
        try:
            proc = subprocess.run(["apt-get", "download", *PEER_PACKAGES], cwd=download, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return None, "apt-get download timed out"
        debs = sorted(pathlib.Path(download).glob("*.deb"))
        if proc.returncode != 0 or len(debs) != len(PEER_PACKAGES):
            return None, f"apt-get download failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
        cache.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(cache)], check=True, timeout=300)
    if not header.is_file():
        return None, f"the packages hold no {header.relative_to(cache)}"
    return cache, ""


def build_peer(work: pathlib.Path) -> tuple[dict[str, Any] | None, str]:
    """The peer's program and its environment ({"exe", "env"}), or None and why not."""
    root, why = _peer_root()
    if root is None:
        return None, why
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None, "no C compiler"
    llvm = root / "usr" / "lib" / "llvm-22"
    libdir = root / "usr" / "lib" / "x86_64-linux-gnu"
    exe = work / "peer_trace"
    build = subprocess.run(
        [compiler, "-O2", f"-I{llvm / 'include'}", "-o", str(exe), str(PEER_SOURCE), f"-L{llvm / 'lib'}", "-lLLVMOffload", f"-Wl,-rpath-link,{libdir}"],
        capture_output=True, text=True, timeout=300,
    )
    if build.returncode != 0:
        return None, f"the peer did not build: {build.stderr.strip()[-300:]}"
    env = {k: v for k, v in os.environ.items() if k != "OFFLOAD_TRACE"}
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(libdir), str(llvm / "lib")])
    return {"exe": exe, "env": env}, ""


def peer_sample(cfg: Config, peer: dict[str, Any]) -> dict[str, Any]:
    """One sample of the peer: ns per olGetDeviceInfo(NAME) with OFFLOAD_TRACE unset and =1."""
    out: dict[str, Any] = {}
    for key, trace in (("off_ns", None), ("traced_ns", "1")):
        env = dict(peer["env"])
        if trace is not None:
            env["OFFLOAD_TRACE"] = trace
        calls = cfg.peer_calls if trace is None else max(1, cfg.peer_calls // 10)
        proc = subprocess.run([str(peer["exe"]), str(calls)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, timeout=600)
        if proc.returncode != 0 or not proc.stdout.startswith("ns_per_call "):
            return {"skipped": f"the peer failed (status {proc.returncode}): {proc.stdout.strip()[-200:]}"}
        out[key] = float(proc.stdout.split()[1])
    return out


# --- merge ---------------------------------------------------------------------------------------


def bench_merge(cfg: Config, work: pathlib.Path, mode: str) -> dict[str, Any]:
    files = []
    for rank in (0, 1):
        path = work / f"rank{rank}.pftrace"
        run_child(mode, "file", cfg.merge_launches, 1, str(path), rank=rank)
        files.append(path)
    from offload.cli._trace_merge import cmd_merge

    size = sum(p.stat().st_size for p in files)
    out_path = work / "merged.pftrace"
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        with open(os.devnull, "w") as sink:
            status = cmd_merge([*map(str, files), "-o", str(out_path)], sink)
        seconds.append(time.perf_counter() - start)
        if status != 0:
            raise RuntimeError(f"offload trace merge failed with status {status}")
    best = min(seconds)
    return {"input_bytes": size, "seconds": best, "mb_per_s": size / 1e6 / best}


# --- the run -------------------------------------------------------------------------------------


def run(cfg: Config, quiet: bool) -> dict[str, Any]:
    streamed = importlib.util.find_spec("offload._trace.timeline_stream") is not None  # (before it, the JSON file was the only one)
    modes = [m for m in MODES if m != "timeline-json" or streamed]
    results: dict[str, Any] = {"modes": {}, "config": cfg.__dict__}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        samples: dict[str, dict[str, list[float]]] = {mode: {"launch_ns": [], "info_ns": []} for mode in modes}
        peer, why = build_peer(work)
        peer_samples: list[dict[str, Any]] = []
        for round_ in range(cfg.rounds):  # one child per mode and round, the modes interleaved (load drifts)
            if not quiet:
                log(f"bench_tracing: round {round_ + 1}/{cfg.rounds} ...")
            for mode in modes if round_ % 2 == 0 else reversed(modes):
                times = run_child(mode, "times", cfg.calls, 3, str(work / f"{mode}{SUFFIX.get(mode, '.pftrace')}"))
                for key in ("launch_ns", "info_ns"):
                    samples[mode][key].append(times[key])
            if peer is not None:  # the peer in the same round, beside the text child (the same load)
                sample = peer_sample(cfg, peer)
                if "skipped" in sample:
                    peer, why = None, sample["skipped"]
                else:
                    peer_samples.append(sample)
        off = samples["off"]
        for mode in modes:
            entry: dict[str, Any] = {key: statistics.median(values) for key, values in samples[mode].items()}
            for key in ("launch_ns", "info_ns"):  # paired with the same round's untraced child
                entry[key.replace("_ns", "_added_ns")] = statistics.median(a - b for a, b in zip(samples[mode][key], off[key]))
            if mode.startswith("timeline"):
                file = work / f"{mode}{SUFFIX.get(mode, '.pftrace')}"
                file.unlink(missing_ok=True)
                made = run_child(mode, "file", cfg.file_calls, 1, str(file))
                entry["file_bytes"] = file.stat().st_size
                entry["bytes_per_call"] = entry["file_bytes"] / made["api_calls"]
            results["modes"][mode] = entry
        if not quiet:
            log("bench_tracing: memory growth ...")
        growth = run_child("timeline", "growth", cfg.growth_calls, 1, str(work / "growth.pftrace"))
        growth["growth_kib"] = growth["rss_after_kib"] - growth["rss_before_kib"]
        results["growth"] = growth
        if not quiet:
            log("bench_tracing: merge ...")
        results["merge"] = bench_merge(cfg, work, "timeline")
        if peer is None or not peer_samples:
            results["peer"] = {"skipped": why}
        else:  # medians over rounds, and the text trace's added cost per round over the peer's
            results["peer"] = {key: statistics.median(p[key] for p in peer_samples) for key in ("off_ns", "traced_ns")}
            text = samples["text"]["info_ns"]
            ratios = [(t - o) / (p["traced_ns"] - p["off_ns"]) for t, o, p in zip(text, off["info_ns"], peer_samples)]
            results["peer"]["text_ratio"] = statistics.median(ratios)
    return results


def checks(results: dict[str, Any]) -> list[Check]:
    modes, peer = results["modes"], results["peer"]
    timeline = modes["timeline"]
    added = timeline["launch_added_ns"]
    out = [
        Check("timeline adds per enqueued launch (ns)", added, f"<= {TARGET_TIMELINE_NS:.0f}", added <= TARGET_TIMELINE_NS),
        Check("timeline bytes per API call", timeline["bytes_per_call"], f"<= {TARGET_BYTES_PER_CALL:.0f}", timeline["bytes_per_call"] <= TARGET_BYTES_PER_CALL),
        Check(
            f"memory growth over {results['growth']['calls']} traced calls (KiB)",
            results["growth"]["growth_kib"],
            f"<= {TARGET_GROWTH_KIB}",
            results["growth"]["growth_kib"] <= TARGET_GROWTH_KIB,
        ),
        Check("trace merge (MB/s)", results["merge"]["mb_per_s"], f">= {TARGET_MERGE_MB_S:.0f}", results["merge"]["mb_per_s"] >= TARGET_MERGE_MB_S),
    ]
    if "skipped" not in peer:  # (the median over rounds of the ratio in each round)
        ratio = peer["text_ratio"]
        out.append(Check("text trace per line, added ns / liboffload 22's", ratio, "<= 1.00", ratio <= 1.0))
    return out


def report(results: dict[str, Any], verdicts: list[Check]) -> str:
    modes, peer = results["modes"], results["peer"]
    lines = [
        "per call (median of rounds; added: median of each round's difference from the untraced child)",
        f"  {'mode':<16}{'olLaunchKernel':>16}{'added':>12}{'olGetDeviceInfo':>17}{'added':>12}{'bytes/call':>12}",
    ]
    for mode, entry in modes.items():
        per = f"{entry['bytes_per_call']:.1f}" if "bytes_per_call" in entry else "-"
        lines.append(
            f"  {mode:<16}{entry['launch_ns'] / 1e3:13.3f} us{entry['launch_added_ns'] / 1e3:9.3f} us"
            f"{entry['info_ns'] / 1e3:14.3f} us{entry['info_added_ns'] / 1e3:9.3f} us{per:>12}"
        )
    if "skipped" in peer:
        lines.append(f"  liboffload 22: skipped ({peer['skipped']})")
    else:
        lines.append(f"  {'liboffload 22':<16}{'-':>16}{'':>12}{peer['off_ns'] / 1e3:14.3f} us   (off)")
        added = (peer["traced_ns"] - peer["off_ns"]) / 1e3
        lines.append(f"  {'liboffload 22':<16}{'-':>16}{'':>12}{peer['traced_ns'] / 1e3:14.3f} us{added:9.3f} us   (OFFLOAD_TRACE=1)")
    growth = results["growth"]
    lines.append(f"memory: {growth['calls']} traced calls: VmRSS {growth['rss_before_kib']} -> {growth['rss_after_kib']} KiB ({growth['growth_kib']:+d} KiB)")
    merge = results["merge"]
    lines.append(f"merge: {merge['input_bytes'] / 1e6:.2f} MB in {merge['seconds'] * 1e3:.1f} ms: {merge['mb_per_s']:.1f} MB/s")
    lines.append("summary")
    for c in verdicts:
        lines.append(f"  {c.name:<52}{c.value:12.2f}  {c.target:<10} {'PASS' if c.passed else 'FAIL'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(child(argv[1], int(argv[2]), int(argv[3]))))
        return 0
    parser = bench_arguments(__doc__, "small counts (a smoke run)")
    args = parser.parse_args(argv)
    results = run(QUICK if args.quick else FULL, quiet=args.json)
    return finish(results, checks(results), report, args)


if __name__ == "__main__":
    exit_on_error(main, "bench_tracing")
