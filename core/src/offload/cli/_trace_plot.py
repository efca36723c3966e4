"""``offload trace plot FILE -o PNG``: a picture of a timeline (``OFFLOAD_TRACE=perfetto``) for
where no browser is at hand: one row per API thread (its calls) and per device queue (its kernels,
copies, fills, host functions, event records and waits), time in milliseconds, drawn with
matplotlib (the ``plot`` extra: ``pip install 'offload[plot]'``, or ``'offload-core[plot]'``; without
it the command says so, exit status 1). A file
that is not a trace is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Any, TextIO

from ._common import _ERROR_PREFIX, EXIT_FAILED, EXIT_NOTHING, EXIT_OK
from ._trace import _number, load_events

PLOT_EXTRA = "offload's plot extra: pip install 'offload[plot]' (offload-core alone: 'offload-core[plot]'; from a checkout: '.[plot]')"
COLOURS = {
    "api": "#8c8c8c",
    "kernel": "#1f77b4",
    "memcpy": "#2ca02c",
    "fill": "#9467bd",
    "host_function": "#ff7f0e",
    "event_record": "#d62728",
    "event_wait": "#e377c2",
}
OTHER = "#bcbd22"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offload trace plot",
        description="Draw a timeline (OFFLOAD_TRACE=perfetto) as a PNG: API calls per thread, device work per queue.",
    )
    parser.add_argument("file", metavar="FILE", help="the Chrome trace-event JSON file")
    parser.add_argument("-o", "--output", required=True, metavar="PNG", help="the picture to write")
    parser.add_argument("--width", type=float, default=12.0, metavar="INCHES", help="figure width (default 12)")
    parser.add_argument("--title", default=None, help="a title (default: the file name)")
    return parser


Row = tuple[Any, Any]  # (pid, tid)


def tracks(events: list[dict[str, Any]]) -> tuple[list[tuple[str, list[tuple[float, float, str, str]]]], float]:
    """The rows to draw, in the trace's own order (API threads first, then each device's queues):
    ``(label, [(start_ms, duration_ms, category, name), ...])``, and the end of the last span."""
    processes: dict[Any, str] = {}
    threads: dict[Row, str] = {}
    order: dict[Row, tuple[float, float]] = {}
    spans: dict[Row, list[tuple[float, float, str, str]]] = defaultdict(list)
    end = 0.0
    for index, e in enumerate(events):
        ph, row = e.get("ph"), (e.get("pid"), e.get("tid"))
        raw_args = e.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        if ph == "M":
            if e.get("name") == "process_name":
                processes[e.get("pid")] = str(args.get("name", e.get("pid")))
            elif e.get("name") == "thread_name":
                threads[row] = str(args.get("name", e.get("tid")))
            elif e.get("name") == "thread_sort_index":
                order[row] = (order.get(row, (0.0, 0.0))[0], _number(args, "sort_index", index))
        elif ph == "X":
            start, duration = _number(e, "ts", index) / 1e3, _number(e, "dur", index) / 1e3
            spans[row].append((start, duration, str(e.get("cat", "")), str(e.get("name", ""))))
            end = max(end, start + duration)
    rows = sorted(spans, key=lambda r: (_sortable(r[0]), order.get(r, (0.0, 0.0))[1], _sortable(r[1])))
    labelled = [(f"{processes.get(r[0], r[0])}: {threads.get(r, r[1])}", spans[r]) for r in rows]
    return labelled, end


def _sortable(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def draw(rows: list[tuple[str, list[tuple[float, float, str, str]]]], end: float, output: str, width: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.patches import Patch

    height = 1.2 + 0.45 * max(len(rows), 1)
    figure, axes = pyplot.subplots(figsize=(width, height))
    seen: set[str] = set()
    minimum = max(end, 1e-6) / 2000  # a span narrower than this still shows as a sliver
    for y, (_, spans) in enumerate(rows):
        for start, duration, category, name in spans:
            colour = COLOURS.get(category, OTHER)
            seen.add(category if category in COLOURS else "other")
            axes.broken_barh([(start, max(duration, minimum))], (y - 0.35, 0.7), facecolors=colour, edgecolors="none")
            if category == "kernel" and duration > end / 25:
                axes.text(start + duration / 2, y, name, ha="center", va="center", fontsize=7, color="white", clip_on=True)
    axes.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, max(end, 1e-3) * 1.01)
    axes.set_xlabel("time since olInit (ms)")
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    legend = [Patch(color=COLOURS.get(c, OTHER), label=c) for c in [*COLOURS, "other"] if c in seen]
    axes.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    figure.tight_layout()
    figure.savefig(output, dpi=110)
    pyplot.close(figure)


def cmd_plot(argv: list[str], out: TextIO) -> int:
    """Run ``offload trace plot`` with ``argv`` (the words after ``plot``); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_NOTHING
    try:
        rows, end = tracks(load_events(args.file))
    except (OSError, ValueError) as error:
        print(f"{_ERROR_PREFIX}cannot read trace {args.file!r}: {error}", file=sys.stderr)
        return EXIT_NOTHING
    if not rows:
        print(f"{_ERROR_PREFIX}trace plot: {args.file!r} holds no spans to draw", file=sys.stderr)
        return EXIT_NOTHING
    try:
        draw(rows, end, args.output, args.width, args.title or args.file)
    except ImportError as error:
        print(f"{_ERROR_PREFIX}trace plot needs matplotlib ({PLOT_EXTRA}): {error}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as error:
        print(f"{_ERROR_PREFIX}trace plot: cannot write {args.output!r}: {error.strerror or error}", file=sys.stderr)
        return EXIT_FAILED
    spans = sum(len(s) for _, s in rows)
    print(f"offload trace plot: {spans} spans on {len(rows)} rows ({end:.3f} ms) into {args.output}", file=out)
    return EXIT_OK
