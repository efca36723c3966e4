"""``offload trace merge FILE... -o OUT``: one timeline for a job from its ranks' files, and the
per-rank part of ``offload trace``'s summary. Perfetto binary files are concatenated into one
(``_trace.perfetto_read.merge_files``: streamed, at the disk's speed); JSON files, or a mix, are merged
into one trace-event JSON document (the binary ones decoded first).

The merge itself (clock alignment, one process group per rank) is ``offload._trace.job_timeline.merge``;
this module reads the files, reports every bad input as one line on stderr with exit status 2
(never a traceback), and writes the result atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from .._trace.job_timeline import MergeError, merge, rank_of_process, write_atomically
from .._trace.perfetto_read import PerfettoFormatError, is_perfetto, load, merge_files
from ._common import _ERROR_PREFIX, EXIT_NOTHING, EXIT_OK, format_table

WORK = ("kernel", "memcpy", "fill", "host_function", "event_record", "event_wait")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offload trace merge",
        description="Merge the timelines of a job's ranks (OFFLOAD_TRACE=perfetto:rank{rank}.json) into one, "
        "clocks aligned by each file's wall-clock anchor, one process group per rank.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a rank's timeline file")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="the merged trace-event JSON file")
    return parser


def _is_binary(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return is_perfetto(f.read(1))
    except OSError as error:
        raise MergeError(f"{path}: cannot read: {error.strerror or error}") from None


def _load(path: str) -> Any:
    try:
        if _is_binary(path):
            return load(path)
        with open(path) as f:
            return json.load(f)
    except PerfettoFormatError as error:
        raise MergeError(f"{path}: not a timeline's Perfetto trace: {error}") from None
    except OSError as error:
        raise MergeError(f"{path}: cannot read: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:  # JSONDecodeError, UnicodeDecodeError
        raise MergeError(f"{path}: not JSON: {error}") from None


def cmd_merge(argv: list[str], out: TextIO) -> int:
    """Run ``offload trace merge`` with ``argv`` (the words after ``merge``); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error argparse printed (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_NOTHING
    try:
        if all(_is_binary(path) for path in args.files):  # concatenated, streamed
            return _report(merge_files(args.files, args.output), args.output, out)
        document = merge([(path, _load(path)) for path in args.files])
        text = json.dumps(document, separators=(",", ":"), allow_nan=False)  # one shot: the C encoder (json.dump's chunks are pure Python, 8x slower)
        write_atomically(args.output, "w", lambda f: f.write(text))
    except MergeError as error:
        print(f"{_ERROR_PREFIX}trace merge: {error}", file=sys.stderr)
        return EXIT_NOTHING
    return _report(document["otherData"]["merged"], args.output, out)


def _report(ranks: list[dict[str, Any]], output: str, out: TextIO) -> int:
    try:
        print(f"offload trace merge: {len(ranks)} rank(s) into {output}", file=out)
        for item in ranks:
            rank = item["rank"] if item["rank"] is not None else "?"
            print(f"  rank {rank}: {item['file']} shifted {item['shift_us'] / 1e3:+.3f} ms (anchor error {item['anchor_error_us']:.3f} us)", file=out)
        out.flush()
    except BrokenPipeError:  # `offload trace merge ... | head -1`: the file is written all the same
        try:
            sys.stdout = open(os.devnull, "w")  # the interpreter's final flush of stdout must not fail again
        except OSError:
            pass
    return EXIT_OK


@dataclass
class RankUsage:
    """What one rank did, summed over its processes (API calls and device work)."""

    calls: int = 0
    api_us: float = 0.0
    kernels: int = 0
    kernel_us: float = 0.0
    copies: int = 0
    bytes: int = 0
    first_us: float | None = None
    last_us: float | None = None


def per_rank(events: list[dict[str, Any]]) -> dict[str, RankUsage]:
    """Usage per ``rank N`` process group ({} when no process is named after a rank)."""
    ranks: dict[Any, str] = {}
    for e in events:
        args = e.get("args")
        if e.get("ph") == "M" and e.get("name") == "process_name" and isinstance(args, dict):
            rank = rank_of_process(str(args.get("name", "")))
            if rank is not None and isinstance(e.get("pid"), (int, str)):
                ranks[e.get("pid")] = rank
    usage: dict[str, RankUsage] = {}
    for e in events:
        pid = e.get("pid")
        rank = ranks.get(pid) if isinstance(pid, (int, str)) else None  # odd ids name no rank
        if rank is None or e.get("ph") != "X":
            continue
        u = usage.setdefault(rank, RankUsage())
        ts, dur = float(e.get("ts", 0.0)), float(e.get("dur", 0.0))
        u.first_us = ts if u.first_us is None else min(u.first_us, ts)
        u.last_us = ts + dur if u.last_us is None else max(u.last_us, ts + dur)
        cat = e.get("cat")
        if cat == "api":
            u.calls += 1
            u.api_us += dur
        elif cat == "kernel":
            u.kernels += 1
            u.kernel_us += dur
        elif cat == "memcpy":
            u.copies += 1
            u.bytes += int((e.get("args") or {}).get("bytes", 0))
    return dict(sorted(usage.items(), key=lambda kv: int(kv[0][5:])))


def format_ranks(usage: dict[str, RankUsage]) -> list[str]:
    """The ``per rank`` section of ``offload trace`` (nothing for a single process's file)."""
    if not usage:
        return []
    rows: list[tuple[str, ...]] = [("RANK", "CALLS", "API ms", "KERNELS", "KERNEL ms", "COPIES", "BYTES", "FIRST ms", "LAST ms")]
    for rank, u in usage.items():
        rows.append(
            (
                rank,
                str(u.calls),
                f"{u.api_us / 1e3:.3f}",
                str(u.kernels),
                f"{u.kernel_us / 1e3:.3f}",
                str(u.copies),
                str(u.bytes),
                f"{(u.first_us or 0.0) / 1e3:.3f}",
                f"{(u.last_us or 0.0) / 1e3:.3f}",
            )
        )
    return ["per rank", *format_table(rows, "  ")]
