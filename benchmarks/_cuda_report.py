"""bench_cuda's report: the figures of each enqueued operation beside its peers (cuda.core and
offload's object layer) and the readable table ``bench_cuda.py`` prints without ``--json``."""

from __future__ import annotations

from typing import Any

__all__ = ["MIB", "peer_figures", "report"]

MIB = 1 << 20


def peer_figures(figures: dict[str, float], flat: str) -> dict[str, Any]:
    """The peers' ns and ratios to raw, and the flat call's ratio to cuda.core's (when it ran)."""
    out: dict[str, Any] = {"objects_ns": figures["objects"], "objects_ratio": figures["objects_ratio"],
                           "objects_vs_flat": figures["objects"] / figures[flat],
                           "undeclared_ns": figures["objects_undeclared"],
                           "undeclared_vs_flat": figures["objects_undeclared"] / figures[flat]}
    if "cuda.core" in figures:
        out |= {"cuda_core_ns": figures["cuda.core"], "cuda_core_ratio": figures["cuda.core_ratio"],
                "flat_vs_cuda_core": figures[flat] / figures["cuda.core"],
                "objects_vs_cuda_core": figures["objects"] / figures["cuda.core"]}
    return out


def _peer_lines(results: dict[str, Any]) -> list[str]:
    """The four-way table: ns per enqueued operation and the ratio to raw cuda.bindings."""
    lines = ["enqueued, ns per call (ratio to raw cuda.bindings): raw | cuda.core | offload flat | offload objects"]
    for label, key in (("launch", "launch"), ("8 B HtoD copy", "memcpy_8b")):
        r = results[key]
        core = (f"{r['cuda_core_ns']:6.0f} ({r['cuda_core_ratio']:.2f}x)" if "cuda_core_ns" in r else "  (not run)")
        lines.append(f"  {label:<14} {r['raw_ns']:6.0f} | {core} | {r['ol_ns']:6.0f} ({r['ratio']:.2f}x)"
                     f" | {r['objects_ns']:6.0f} ({r['objects_ratio']:.2f}x); objects / flat {r['objects_vs_flat']:.2f}x"
                     + (f"; flat / cuda.core {r['flat_vs_cuda_core']:.2f}x" if "flat_vs_cuda_core" in r else "")
                     + (f"; objects / cuda.core {r['objects_vs_cuda_core']:.2f}x" if "objects_vs_cuda_core" in r else ""))
    r = results["launch"]
    lines.append(f"  launch, no declared signature (objects): {r['undeclared_ns']:6.0f} ns; / flat {r['undeclared_vs_flat']:.2f}x")
    p = results["pooled"]
    lines.append(f"  alloc-use-free {p['raw']:6.0f} | " + (f"{p['cuda.core']:6.0f} ({p['cuda.core_ratio']:.2f}x)" if "cuda.core" in p
                 else "  (not run)") + f" | {p['flat']:6.0f} ({p['flat_ratio']:.2f}x) | {p['objects']:6.0f} ({p['objects_ratio']:.2f}x)"
                 + (f"; objects / cuda.core {p['objects_vs_cuda_core']:.2f}x, flat / cuda.core {p['flat_vs_cuda_core']:.2f}x"
                    if "objects_vs_cuda_core" in p else ""))  # fmt: skip
    if results["cuda_core_missing"]:
        lines.append(f"  cuda.core not run: {results['cuda_core_missing']}")
    return lines


def report(results: dict[str, Any]) -> str:
    lines = [
        f"driver: {results['driver']}; device: {results['device']}",
        f"launch      olLaunchKernel enqueued {results['launch']['ol_ns']:9.0f} ns   raw cuLaunchKernel {results['launch']['raw_ns']:9.0f} ns   ratio {results['launch']['ratio']:.2f}x",
        f"memcpy 8 B  olMemcpy HtoD          {results['memcpy_8b']['ol_ns']:9.0f} ns   raw cuMemcpyHtoDAsync {results['memcpy_8b']['raw_ns']:6.0f} ns   ratio {results['memcpy_8b']['ratio']:.2f}x",
        *_peer_lines(results),
        f"memcpy {results['memcpy_large']['bytes'] // MIB} MiB pinned  olMemcpy {results['memcpy_large']['ol_gbps']:.2f} GB/s   raw {results['memcpy_large']['raw_gbps']:.2f} GB/s   {results['memcpy_large']['ratio']:.3f}x throughput",
        f"churn       olCreateQueue+olDestroyQueue {results['churn']['ol_queues_per_s']:9.0f} queues/s   raw cuStreamCreate+Destroy {results['churn']['raw_streams_per_s']:9.0f} streams/s",
        "summary",
    ]  # fmt: skip
    for check in results["checks"]:
        lines.append(
            f"  {'PASS' if check['passed'] else 'FAIL'}  {check['name']}: {check['value']:.3f} (target {check['target']})"
        )
    return "\n".join(lines)
