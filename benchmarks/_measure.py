"""Timing helpers of the benchmark scripts (each script runs with this folder on ``sys.path``),
and what every script shares around them: its command line, its last step, the flat API's devices.

A sample is the ns per call of a loop run with the garbage collector off; variants are sampled in
interleaved rounds, the order reversed every other round, and compared by medians or by the
median of per-round ratios (paired: load that drifts between rounds on a shared machine cancels).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "bench_arguments", "call_loop", "exit_on_error", "flat_devices", "interleaved", "interleaved_samples", "medians", "no_gc",
    "ns_per", "paired_ratio",
]


@contextmanager
def no_gc() -> Iterator[None]:
    """The garbage collector off for the block (restored as it was)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ns_per(body: Callable[[], object], count: int) -> float:
    """ns per unit of ``body()``, which does ``count`` units, timed with the collector off."""
    with no_gc():
        start = time.perf_counter_ns()
        body()
        return (time.perf_counter_ns() - start) / count


def interleaved_samples(
    variants: dict[str, Callable[[], float]], repeats: int, *, settle_s: float = 0.0, gc_off: bool = False
) -> dict[str, list[float]]:
    """Every variant's samples, taken round-robin (the order reversed every other round); with
    ``settle_s`` a pause before each sample, with ``gc_off`` the collector off around it."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for round_ in range(repeats):
        for name in order if round_ % 2 == 0 else reversed(order):
            if settle_s:
                time.sleep(settle_s)
            if gc_off:
                with no_gc():
                    samples[name].append(variants[name]())
            else:
                samples[name].append(variants[name]())
    return samples


def call_loop(call: str, **names: Any) -> Callable[[int], None]:
    """``body(n)`` making the call ``call`` n times, with ``names`` bound as fast locals.

    Each loop is compiled afresh: loops sharing one code object would share its specialising
    inline caches, and the variant called second would run on caches tuned for the first.
    """
    params = "".join(f", {name}={name}" for name in names)
    source = f"def make({', '.join(names)}):\n    def body(n{params}):\n        for _ in range(n):\n            {call}\n    return body\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<bench loop {call}>", "exec"), namespace)
    return namespace["make"](**names)  # type: ignore[no-any-return]


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in samples.items()}


def interleaved(
    variants: dict[str, Callable[[], float]], repeats: int, *, settle_s: float = 0.0, gc_off: bool = False
) -> dict[str, float]:
    """The median of each variant's interleaved samples."""
    return medians(interleaved_samples(variants, repeats, settle_s=settle_s, gc_off=gc_off))


def paired_ratio(first: list[float], second: list[float]) -> float:
    """The median over rounds of ``first / second``."""
    return statistics.median(a / b for a, b in zip(first, second, strict=True))


def exit_on_error(main: Callable[[], int], prog: str) -> None:
    """Run a script's ``main`` and exit with its status; on an error (or Ctrl-C) print one line
    naming it and exit at once (1, or 130) without the interpreter's exit handlers, which would
    wait for work a failed device may never finish: a benchmark never hangs after an error."""
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        code = 130
    except Exception as error:  # noqa: BLE001 - reported in one line, then exit
        print(f"{prog}: error: {type(error).__name__}: {error}", file=sys.stderr)
        code = 1
    else:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def bench_arguments(doc: str | None, quick: str, strict: str | None = "exit 1 when a target is missed") -> argparse.ArgumentParser:
    """The command line every bench script takes: ``--quick`` (``quick`` says what shrinks),
    ``--json`` (only the results document on stdout) and, unless ``strict`` is None, ``--strict``
    (``strict`` says when it exits non-zero); described by the first paragraph of ``doc``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--json", action="store_true", help="print only the results as JSON on stdout")
    if strict is not None:
        parser.add_argument("--strict", action="store_true", help=strict)
    return parser


@dataclass(frozen=True)
class Check:
    """A target's verdict: what was measured, its value, the target (as the report says it) and
    whether it was met."""

    name: str
    value: float
    target: str
    passed: bool


def finish(results: dict[str, Any], verdicts: Sequence[Check], report: Callable[[dict[str, Any], list[Check]], str], args: argparse.Namespace) -> int:
    """A script's last step: the verdicts into ``results["checks"]``, then
    the results document (``--json``) or ``report(results, verdicts)`` on stdout; the exit status
    (1 under ``--strict`` when a target is missed)."""
    results["checks"] = [vars(check) for check in verdicts]
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report(results, list(verdicts)))
    return 1 if args.strict and not all(check.passed for check in verdicts) else 0


def rss_kib() -> int:
    """The process's resident set size (VmRSS) in KiB, 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def log(message: str) -> None:
    """A progress line on stderr (stdout stays the results)."""
    print(message, file=sys.stderr, flush=True)


def flat_devices() -> list[Any]:
    """Every device ``olIterateDevices`` reports (after ``olInit``), in its order."""
    import offload as ol

    found: list[Any] = []
    ol.olIterateDevices(lambda device, _: found.append(device) or True)
    return found
