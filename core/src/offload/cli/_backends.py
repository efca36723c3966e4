"""``offload backends``: every discovered backend, loaded or skipped and why."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, TextIO

import offload as ol

from ._common import EXIT_OK, _print_json, _session, format_table


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
